package pgtest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 between a store and the test server.
// A test freezes it (bytes stop flowing both ways, as when the server or
// the network stalls), cuts it (every connection dropped and new ones
// refused, as when the server is stopped) and restores it, without touching
// the server other tests share.
//
// A frozen proxy keeps what it has read and delivers it on Restore, even if
// the sender has hung up meanwhile: a stalled network does the same, so a
// query the store gave up on may still reach the server late.
type Proxy struct {
	dbURL  *url.URL
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu       sync.Mutex
	frozen   bool
	cut      bool
	freezeOn []byte
	thaw     chan struct{} // closed when the current freeze ends
	links    map[*link]struct{}
}

// link is one proxied connection.
type link struct {
	client, server net.Conn
	killed         chan struct{} // closed by Cut and Close
	done           chan struct{} // closed when both directions have ended
	held           bool          // a chunk waited in a freeze
	once           sync.Once
}

func (l *link) kill() {
	l.once.Do(func() {
		close(l.killed)
		resetClose(l.client)
		resetClose(l.server)
	})
}

// resetClose closes c with a reset, like a server that went away.
func resetClose(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// NewProxy starts a proxy to the server of dbURL (a URL from NewDatabase);
// it is closed when tb ends.
func NewProxy(tb testing.TB, dbURL string) *Proxy {
	tb.Helper()
	u, err := url.Parse(dbURL)
	if err != nil || u.Host == "" {
		tb.Fatalf("pgtest: proxy needs a postgres:// URL with a host, got %q", redact(dbURL))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("pgtest: proxy listen: %v", err)
	}
	p := &Proxy{dbURL: u, target: u.Host, ln: ln, thaw: make(chan struct{}), links: map[*link]struct{}{}}
	close(p.thaw)
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.close)
	return p
}

// URL is the database URL with the proxy in place of the server.
func (p *Proxy) URL() string {
	u := *p.dbURL
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Freeze stops forwarding bytes in both directions; connections stay open
// and new ones are accepted, but nothing reaches the other side.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freezeLocked()
}

func (p *Proxy) freezeLocked() {
	if !p.frozen {
		p.frozen = true
		p.thaw = make(chan struct{})
	}
}

// FreezeOn freezes the proxy when the client sends a chunk containing
// pattern, before that chunk is forwarded (e.g. "commit\x00": the server
// never sees the COMMIT until Restore).
func (p *Proxy) FreezeOn(pattern string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.freezeOn = []byte(pattern)
}

// Cut drops every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	links := p.takeLinksLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.kill()
	}
}

// Restore ends a freeze or a cut. Held bytes are delivered.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	p.freezeOn = nil
	if p.frozen {
		p.frozen = false
		close(p.thaw)
	}
}

// WaitHeldClosed waits until every connection that had bytes held by a
// freeze has ended at both sides: by then the server has acted on all it
// will ever receive from them. Call it after Restore.
func (p *Proxy) WaitHeldClosed(tb testing.TB, timeout time.Duration) {
	tb.Helper()
	p.mu.Lock()
	var held []*link
	for l := range p.links {
		if l.held {
			held = append(held, l)
		}
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, l := range held {
		select {
		case <-l.done:
		case <-ctx.Done():
			tb.Fatalf("pgtest: a connection held by the freeze is still open after %v", timeout)
		}
	}
}

func (p *Proxy) takeLinksLocked() []*link {
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	return links
}

func (p *Proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	links := p.takeLinksLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.kill()
	}
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.mu.Unlock()
		if cut {
			resetClose(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			resetClose(c)
			continue
		}
		l := &link{client: c, server: s, killed: make(chan struct{}), done: make(chan struct{})}
		p.mu.Lock()
		p.links[l] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(l)
	}
}

// serve pipes both directions of l and forgets it when both have ended.
func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	var both sync.WaitGroup
	both.Add(2)
	go func() { defer both.Done(); p.pipe(l, l.server, l.client, true) }()
	go func() { defer both.Done(); p.pipe(l, l.client, l.server, false) }()
	both.Wait()
	_ = l.client.Close()
	_ = l.server.Close()
	close(l.done)
	p.mu.Lock()
	if !l.held { // held links stay listed for WaitHeldClosed
		delete(p.links, l)
	}
	p.mu.Unlock()
}

// pipe copies src to dst chunk by chunk, holding each chunk while frozen.
func (p *Proxy) pipe(l *link, dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.pass(l, buf[:n], fromClient) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				l.kill()
				return
			}
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite() // pass the hang-up on, as TCP would
				}
			}
			return
		}
	}
}

// pass waits while the proxy is frozen; false means the link was killed.
func (p *Proxy) pass(l *link, chunk []byte, fromClient bool) bool {
	p.mu.Lock()
	if fromClient && p.freezeOn != nil && bytes.Contains(chunk, p.freezeOn) {
		p.freezeOn = nil
		p.freezeLocked()
	}
	for p.frozen {
		l.held = true
		thaw := p.thaw
		p.mu.Unlock()
		select {
		case <-thaw:
		case <-l.killed:
			return false
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	select {
	case <-l.killed:
		return false
	default:
		return true
	}
}
