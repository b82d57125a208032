//go:build agentsite_testnet

package p2p

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	ma "github.com/multiformats/go-multiaddr"
)

// A wide-area link on one machine, for the planet benchmark (make
// bench-planet) and its small test: this kernel has no netem, so the
// latency is in the dialer. With Config.LinkDelay set, the host's only
// transport is TCP, and every connection it dials holds each byte
// LinkDelay/2 in each direction (the dialer's writes before they go out,
// what it reads before it is handed up), in order, at most linkRate bytes
// a second each way: one round trip of LinkDelay, and the time to send a
// large page. Every connection has one dialer, so every byte of every
// connection is delayed once each way, whichever side dialed. The TCP
// handshake costs one round trip too. It exists only in binaries built
// with -tags agentsite_testnet.
const (
	linkRate     = 100e6 / 8 // bytes a second, each way: a 100 Mbit/s link
	linkChunk    = 64 << 10  // the largest piece held at once
	linkInFlight = 64        // pieces held per direction before a writer waits
)

func linkOptions(d time.Duration) ([]libp2p.Option, error) {
	if d <= 0 {
		return nil, nil
	}
	dial := func(ma.Multiaddr) (tcp.ContextDialer, error) { return delayDialer{half: d / 2}, nil }
	return []libp2p.Option{libp2p.Transport(tcp.NewTCPTransport, tcp.WithDialerForAddr(dial))}, nil
}

type delayDialer struct{ half time.Duration }

func (d delayDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	t := time.NewTimer(2 * d.half) // SYN, SYN-ACK
	defer t.Stop()
	select {
	case <-ctx.Done():
		_ = c.Close()
		return nil, ctx.Err()
	case <-t.C:
	}
	return newDelayConn(c, d.half), nil
}

// piece is bytes on the link, due at the other end at due (err: the
// connection ended there).
type piece struct {
	b   []byte
	due time.Time
	err error
}

// pacer spaces pieces at linkRate and adds the propagation delay.
type pacer struct {
	half time.Duration
	free time.Time // when the link is free again
}

func (p *pacer) due(n int, now time.Time) time.Time {
	start := now
	if p.free.After(now) {
		start = p.free
	}
	p.free = start.Add(time.Duration(float64(n) / linkRate * float64(time.Second)))
	return p.free.Add(p.half)
}

// delayConn is a net.Conn whose bytes each way arrive half later.
type delayConn struct {
	net.Conn
	in, out chan piece
	done    chan struct{}
	once    sync.Once

	wmu   sync.Mutex
	wpace pacer
	wdl   time.Time
	werr  error

	rmu    sync.Mutex
	rdl    time.Time
	rwake  chan struct{}
	head   *piece
	rest   []byte
	rerr   error
	wfailc chan error
}

func newDelayConn(c net.Conn, half time.Duration) *delayConn {
	dc := &delayConn{
		Conn: c, in: make(chan piece, linkInFlight), out: make(chan piece, linkInFlight),
		done: make(chan struct{}), wpace: pacer{half: half}, rwake: make(chan struct{}, 1), wfailc: make(chan error, 1),
	}
	go dc.readLoop(half)
	go dc.writeLoop()
	return dc
}

func (c *delayConn) readLoop(half time.Duration) {
	p := pacer{half: half}
	for {
		b := make([]byte, linkChunk)
		n, err := c.Conn.Read(b)
		now := time.Now()
		var pc piece
		if n > 0 {
			pc = piece{b: b[:n], due: p.due(n, now)}
		} else if err != nil {
			pc = piece{err: err, due: p.due(0, now)}
		} else {
			continue
		}
		select {
		case c.in <- pc:
		case <-c.done:
			return
		}
		if n > 0 && err != nil {
			select {
			case c.in <- piece{err: err, due: pc.due}:
			case <-c.done:
			}
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *delayConn) writeLoop() {
	for {
		select {
		case <-c.done:
			return
		case pc := <-c.out:
			if !sleepUntil(pc.due, c.done) {
				return
			}
			if _, err := c.Conn.Write(pc.b); err != nil {
				c.wfailc <- err
				return
			}
		}
	}
}

// sleepUntil waits for t, or done (false).
func sleepUntil(t time.Time, done <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-done:
		return false
	}
}

func (c *delayConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(b) > 0 {
		if c.werr == nil {
			select {
			case c.werr = <-c.wfailc:
			default:
			}
		}
		if c.werr != nil {
			return written, c.werr
		}
		n := min(len(b), linkChunk)
		pc := piece{b: append([]byte(nil), b[:n]...), due: c.wpace.due(n, time.Now())}
		var dl <-chan time.Time
		if !c.wdl.IsZero() {
			t := time.NewTimer(time.Until(c.wdl))
			defer t.Stop()
			dl = t.C
		}
		select {
		case c.out <- pc:
		case <-c.done:
			return written, net.ErrClosed
		case <-dl:
			return written, os.ErrDeadlineExceeded
		}
		written += n
		b = b[n:]
	}
	return written, nil
}

func (c *delayConn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for len(c.rest) == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		var dl <-chan time.Time
		if !c.rdl.IsZero() {
			if !time.Now().Before(c.rdl) {
				return 0, os.ErrDeadlineExceeded
			}
			t := time.NewTimer(time.Until(c.rdl))
			defer t.Stop()
			dl = t.C
		}
		if c.head == nil {
			c.rmu.Unlock()
			var (
				pc  piece
				ok  = true
				err error
			)
			select {
			case pc = <-c.in:
			case <-c.done:
				err = net.ErrClosed
			case <-dl:
				err = os.ErrDeadlineExceeded
			case <-c.rwake: // the deadline moved
				ok = false
			}
			c.rmu.Lock()
			if err != nil {
				return 0, err
			}
			if !ok {
				continue
			}
			c.head = &pc
		}
		wait := time.NewTimer(time.Until(c.head.due))
		c.rmu.Unlock()
		var err error
		select {
		case <-wait.C:
		case <-c.done:
			err = net.ErrClosed
		case <-dl:
			err = os.ErrDeadlineExceeded
		case <-c.rwake:
		}
		wait.Stop()
		c.rmu.Lock()
		if err != nil {
			return 0, err
		}
		if time.Now().Before(c.head.due) {
			continue
		}
		c.rest, c.rerr, c.head = c.head.b, c.head.err, nil
	}
	n := copy(b, c.rest)
	c.rest = c.rest[n:]
	return n, nil
}

func (c *delayConn) SetDeadline(t time.Time) error {
	_ = c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *delayConn) SetReadDeadline(t time.Time) error {
	c.rmu.Lock()
	c.rdl = t
	c.rmu.Unlock()
	select {
	case c.rwake <- struct{}{}:
	default:
	}
	return nil
}

func (c *delayConn) SetWriteDeadline(t time.Time) error {
	c.wmu.Lock()
	c.wdl = t
	c.wmu.Unlock()
	return nil
}

func (c *delayConn) Close() error {
	err := errors.New("already closed")
	c.once.Do(func() {
		close(c.done)
		err = c.Conn.Close()
	})
	return err
}

// WithholdGossip makes the node drop, on receipt, every gossiped record
// whose id drop says (nil: none): as if its gossip was lost on the way
// here. Sync and the DHT still deliver it. Tests only.
func (n *Node) WithholdGossip(drop func(id string) bool) {
	if drop == nil {
		n.withhold.Store(nil)
		return
	}
	n.withhold.Store(&drop)
}
