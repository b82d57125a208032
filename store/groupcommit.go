package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// GroupWriter is a group commit (docs/architecture.md §6, "Conversation
// writes"): one goroutine takes the writes queued while it wrote the last
// batch and hands them to commit together, and each caller of Do waits for
// its batch. The engines use it for conversation writes. Start it on first
// use with Do; Close ends it.
type GroupWriter[T any] struct {
	max    int
	commit func(batch []*Pending[T])
	once   sync.Once
	ops    chan *Pending[T]
	quit   chan struct{}
	wg     sync.WaitGroup
	// mu guards closed: no write is queued once Close has begun.
	mu     sync.RWMutex
	closed bool
}

// Pending is one write of a batch: Op as Do was given it, and Err, which
// commit sets for it (nil: written).
type Pending[T any] struct {
	Op  T
	Err error
	// state is pendingQueued until the writer takes the write
	// (pendingTaken) or its caller gives up on it first (pendingAbandoned).
	state atomic.Int32
	done  chan struct{}
}

const (
	pendingQueued int32 = iota
	pendingTaken
	pendingAbandoned
)

// ErrGroupWriterClosed fails the writes queued when the store closes.
var ErrGroupWriterClosed = fmt.Errorf("the store is closed: %w", ErrUnavailable)

// NewGroupWriter returns a group commit of at most max writes a batch,
// each batch written by commit, which sets each write's Err (the writes it
// is given were all taken: their callers wait for them).
func NewGroupWriter[T any](max int, commit func(batch []*Pending[T])) *GroupWriter[T] {
	return &GroupWriter[T]{max: max, commit: commit}
}

// Do queues op and waits for its batch's commit. A caller whose ctx ends
// before the writer took op gets ctx's error and op is not written; once
// taken, op's result is its batch's, so an error never hides a write that
// was made.
func (g *GroupWriter[T]) Do(ctx context.Context, op T) error {
	g.once.Do(func() {
		g.ops = make(chan *Pending[T], g.max)
		g.quit = make(chan struct{})
		g.wg.Add(1)
		go g.run()
	})
	p := &Pending[T]{Op: op, done: make(chan struct{})}
	g.mu.RLock()
	if g.closed {
		g.mu.RUnlock()
		return ErrGroupWriterClosed
	}
	select {
	case g.ops <- p:
		g.mu.RUnlock()
	case <-ctx.Done():
		g.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case <-p.done:
		return p.Err
	case <-ctx.Done():
		if p.state.CompareAndSwap(pendingQueued, pendingAbandoned) {
			return ctx.Err()
		}
		<-p.done
		return p.Err
	}
}

// Close stops the writer after the batch it is writing; the writes still
// queued fail with ErrGroupWriterClosed.
func (g *GroupWriter[T]) Close() {
	g.mu.Lock()
	started := g.ops != nil && !g.closed
	g.closed = true
	g.mu.Unlock()
	if !started {
		return
	}
	close(g.quit)
	g.wg.Wait()
}

// run is the writer: it takes the first write queued and every other one
// queued meanwhile (up to max), and commits them as one batch.
func (g *GroupWriter[T]) run() {
	defer g.wg.Done()
	batch := make([]*Pending[T], 0, g.max)
	for {
		select {
		case <-g.quit:
			for {
				select {
				case p := <-g.ops:
					p.Err = ErrGroupWriterClosed
					close(p.done)
				default:
					return
				}
			}
		case p := <-g.ops:
			batch = append(batch[:0], p)
		more:
			for len(batch) < g.max {
				select {
				case p := <-g.ops:
					batch = append(batch, p)
				default:
					break more
				}
			}
			live := batch[:0]
			for _, p := range batch {
				if p.state.CompareAndSwap(pendingQueued, pendingTaken) {
					live = append(live, p)
				}
			}
			if len(live) > 0 {
				g.commit(live)
				for _, p := range live {
					close(p.done)
				}
			}
		}
	}
}
