// Package mcppool keeps initialized MCP clients for reuse, so a
// conversation does not pay the handshake on every message: one client per
// key, dialled once however many callers ask for it at the same time,
// dropped when a caller finds it broken, closed when idle and on Close.
//
// It is the one pool of MCP clients: the agent runtime's mcp backend keys
// it by server URL and credentials, p2p/peermcp's client by host peer. It
// is a leaf (no AgentSite imports) under mcpkit, so that peermcp can use
// it without taking in the runtime's backends.
package mcppool

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// ErrClosed is returned by Acquire after Close.
var ErrClosed = errors.New("MCP client pool closed")

// Pool keeps one client of type C per key K. It is safe for concurrent
// use; the zero value is not usable (see New).
type Pool[K comparable, C io.Closer] struct {
	idle time.Duration

	mu      sync.Mutex
	entries map[K]*entry[C]
	closed  bool
	stop    chan struct{}
	janitor bool           // the idle sweeper runs
	wg      sync.WaitGroup // the sweeper and background closes
}

// entry is one key's client, or its dial in progress.
type entry[C io.Closer] struct {
	ready chan struct{} // closed once c or err is set
	c     C
	err   error
	// abandoned: the dial failed because its caller went away, which says
	// nothing about the server; callers still waiting dial again.
	abandoned bool

	// guarded by Pool.mu
	users   int
	used    time.Time
	evicted bool // out of the map; closed when the last user releases it
}

// New returns a pool that closes clients unused for idle.
func New[K comparable, C io.Closer](idle time.Duration) *Pool[K, C] {
	return &Pool[K, C]{idle: idle, entries: map[K]*entry[C]{}, stop: make(chan struct{})}
}

// Acquire returns the client for key, calling dial to make one if there
// is none; concurrent callers for the same key share one dial. The caller
// must call release once done with the client, with broken true if a
// failure (a transport error) may have left it unusable: the next Acquire
// then dials afresh. Errors are dial's, ctx's or ErrClosed.
func (p *Pool[K, C]) Acquire(ctx context.Context, key K, dial func(context.Context) (C, error)) (c C, release func(broken bool), err error) {
	for {
		e, leader, err := p.join(key)
		if err != nil {
			return c, nil, err
		}
		if leader {
			p.dial(ctx, key, e, dial)
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			p.release(key, e, false)
			return c, nil, ctx.Err()
		}
		if e.err != nil {
			p.release(key, e, false)
			if e.abandoned && !leader && ctx.Err() == nil {
				continue
			}
			return c, nil, e.err
		}
		return e.c, func(broken bool) { p.release(key, e, broken) }, nil
	}
}

// join counts the caller as a user of key's entry, making the entry if
// there is none (then the caller is its leader and dials).
func (p *Pool[K, C]) join(key K) (e *entry[C], leader bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, false, ErrClosed
	}
	e, ok := p.entries[key]
	if !ok {
		e = &entry[C]{ready: make(chan struct{})}
		p.entries[key] = e
	}
	e.users++
	e.used = time.Now()
	return e, !ok, nil
}

// dial makes e's client and publishes it (or the failure) to its waiters.
func (p *Pool[K, C]) dial(ctx context.Context, key K, e *entry[C], dial func(context.Context) (C, error)) {
	c, err := dial(ctx)
	p.mu.Lock()
	lateClose := err == nil && p.closed // Close could not see this client
	if lateClose {
		err = ErrClosed
	}
	e.c, e.err = c, err
	if err != nil {
		e.abandoned = ctx.Err() != nil
		if p.entries[key] == e {
			delete(p.entries, key)
		}
	} else if !p.janitor {
		p.janitor = true
		p.wg.Add(1)
		go p.sweep()
	}
	close(e.ready)
	p.mu.Unlock()
	if lateClose {
		_ = c.Close()
	}
}

// release ends one use of e; a broken client leaves the map, and an
// evicted one is closed once nobody uses it.
func (p *Pool[K, C]) release(key K, e *entry[C], broken bool) {
	p.mu.Lock()
	e.users--
	e.used = time.Now()
	if broken && p.entries[key] == e {
		delete(p.entries, key)
		e.evicted = true
	}
	closeIt := e.evicted && e.users == 0 && e.err == nil
	background := closeIt && !p.closed
	if background {
		p.wg.Add(1)
	}
	p.mu.Unlock()
	switch {
	case background:
		// A close may talk to the server (mcp-go ends its session with a
		// DELETE): not on the caller's time. Close waits for it.
		go func() {
			defer p.wg.Done()
			_ = e.c.Close()
		}()
	case closeIt: // after Close, which did not see it
		_ = e.c.Close()
	}
}

// sweep closes clients unused for longer than p.idle, until Close.
func (p *Pool[K, C]) sweep() {
	defer p.wg.Done()
	t := time.NewTicker(max(p.idle/2, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			for k, e := range p.entries {
				if e.users == 0 && e.err == nil && now.Sub(e.used) > p.idle {
					delete(p.entries, k)
					e.evicted = true
					p.wg.Add(1)
					go func() {
						defer p.wg.Done()
						_ = e.c.Close()
					}()
				}
			}
			p.mu.Unlock()
		}
	}
}

// Len is how many clients the pool holds (dials in progress included).
func (p *Pool[K, C]) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

// Close closes every client, in use or not (calls in flight fail), and
// waits for background closes; Acquire fails with ErrClosed after it.
func (p *Pool[K, C]) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	var ready []C
	for _, e := range p.entries {
		select {
		case <-e.ready:
			if e.err == nil {
				ready = append(ready, e.c)
			}
		default: // still dialling: its leader closes what it gets
		}
	}
	p.entries = nil
	close(p.stop)
	p.mu.Unlock()
	for _, c := range ready {
		_ = c.Close()
	}
	p.wg.Wait()
	return nil
}
