package peermcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The lines protocol (agent.MCPLinesProtocol) is MCP's stdio transport on
// a libp2p stream: newline-delimited JSON-RPC, one long-lived stream from
// a calling node to a host, many send_message calls in flight on it at
// once, told apart by their ids and progress tokens. The caller writes
// requests and notifications/cancelled; the host writes each call's
// notifications and then its response. No HTTP on either side, no stream
// opened a turn, and each end writes what is waiting in as few writes as
// it can (lines_writer.go): that is most of what a cross-node turn cost
// over the HTTP transport (BENCHMARKS.md, "Chat turns across nodes").
// It is what a node sends to hosts that speak it (identify says so);
// older hosts are called over HTTP (client_lean.go, or mcp-go's client).

// maxQueuedEvents bounds the notifications of one call that wait for its
// turn to take them: the stream's reader never blocks on one slow turn.
// Chunks past it are dropped; the reply's text is whole in the response,
// and what the chunks missed goes out then.
const maxQueuedEvents = 256

// linesSlot is the stream to one host, opened once at a time.
type linesSlot struct {
	mu   sync.Mutex // held while opening
	conn *linesConn
}

// linesConn is a caller's stream to one host and the calls in flight on it.
type linesConn struct {
	s       network.Stream
	w       *lineWriter
	limited bool   // on a relayed connection: one call, then retired
	forget  func() // drops the client's slot for the host, if lc is its stream

	mu      sync.Mutex // guards what follows
	calls   map[uint64]*linesPending
	byToken map[string]*linesPending
	err     error // set once the stream broke: every call fails with it
	idle    *time.Timer
	retired bool // closed once its calls end
}

// linesPending is one call waiting for its answer.
type linesPending struct {
	token  string
	events chan *answerEvent // notifications, in order
	done   chan answerEvent  // the response
}

// linesCall sends one call to the host on its lines stream.
func (c *Client) linesCall(ctx context.Context, hostPeerID, token string, sink *progressSink, req mcp.CallToolRequest, args turnArgs) (*mcp.CallToolResult, error) {
	id := c.ids.Add(1)
	body, err := leanBody(id, req, args)
	if err != nil {
		return nil, err
	}
	p := &linesPending{token: token, events: make(chan *answerEvent, maxQueuedEvents), done: make(chan answerEvent, 1)}
	lc, err := c.streamTo(ctx, hostPeerID, id, p)
	if err != nil {
		return nil, err
	}
	defer lc.unregister(id)
	if !lc.w.add(append(body, '\n'), true) {
		return nil, lc.broken()
	}
	find := func(tok string) *progressSink {
		if tok == token {
			return sink
		}
		return nil
	}
	for {
		select {
		case ev := <-p.events:
			ev.apply(find)
		case ev := <-p.done:
			// The reader queued the notifications before the response.
			for len(p.events) > 0 {
				(<-p.events).apply(find)
			}
			return ev.res, ev.err
		case <-ctx.Done():
			lc.cancel(id)
			return nil, ctx.Err()
		}
	}
}

// streamTo registers call id (p) on the lines stream to the host, opening
// it if there is none, and returns the stream.
func (c *Client) streamTo(ctx context.Context, host string, id uint64, p *linesPending) (*linesConn, error) {
	c.linesMu.Lock()
	if c.closed {
		c.linesMu.Unlock()
		return nil, transport.NewError(errors.New("the client is closed"))
	}
	slot := c.lines[host]
	if slot == nil {
		slot = &linesSlot{}
		c.lines[host] = slot
	}
	c.linesMu.Unlock()
	slot.mu.Lock()
	defer slot.mu.Unlock()
	// A stream on a relayed connection serves one call: the next opens its
	// own, on the direct connection once hole punching made one (a relay
	// bounds what a connection may carry and for how long).
	if lc := slot.conn; lc != nil && !lc.limited && lc.register(id, p) == nil {
		return lc, nil
	}
	s, err := c.net.OpenMCPLines(ctx, host)
	if err != nil {
		return nil, transport.NewError(err)
	}
	lc := &linesConn{s: s, limited: s.Conn().Stat().Limited, calls: map[uint64]*linesPending{}, byToken: map[string]*linesPending{}}
	// A host not called for clientIdle is forgotten, so the client holds
	// only the hosts its people are talking to.
	lc.forget = func() {
		slot.mu.Lock()
		defer slot.mu.Unlock()
		if slot.conn != lc {
			return // replaced meanwhile
		}
		slot.conn = nil
		c.linesMu.Lock()
		if c.lines[host] == slot {
			delete(c.lines, host)
		}
		c.linesMu.Unlock()
	}
	lc.w = newLineWriter(s, func() { lc.fail(errors.New("writing to the host failed")) })
	if old := slot.conn; old != nil {
		old.retire()
	}
	slot.conn = lc
	go lc.read()
	if err := lc.register(id, p); err != nil {
		return nil, err
	}
	return lc, nil
}

// retire closes the stream once its calls in flight have ended; it takes
// no more.
func (lc *linesConn) retire() {
	lc.mu.Lock()
	lc.retired = true
	idle := len(lc.calls) == 0
	lc.mu.Unlock()
	if idle {
		lc.fail(errRetired)
	}
}

// errRetired ends a stream another replaced.
var errRetired = errors.New("replaced by another stream")

// broken is the error calls on a broken stream fail with.
func (lc *linesConn) broken() error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.err == nil {
		return transport.NewError(errors.New("the stream to the host ended"))
	}
	return transport.NewError(lc.err)
}

func (lc *linesConn) register(id uint64, p *linesPending) error {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.err != nil {
		return transport.NewError(lc.err)
	}
	lc.calls[id] = p
	lc.byToken[p.token] = p
	if lc.idle != nil {
		lc.idle.Stop()
	}
	return nil
}

// unregister forgets a call; the stream is closed once it has had no call
// for clientIdle.
func (lc *linesConn) unregister(id uint64) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if p := lc.calls[id]; p != nil {
		delete(lc.byToken, p.token)
		delete(lc.calls, id)
	}
	if len(lc.calls) > 0 || lc.err != nil {
		return
	}
	if lc.retired || lc.limited {
		go lc.fail(errRetired)
		return
	}
	if lc.idle == nil {
		lc.idle = time.AfterFunc(clientIdle, lc.closeIfIdle)
	} else {
		lc.idle.Reset(clientIdle)
	}
}

func (lc *linesConn) closeIfIdle() {
	lc.mu.Lock()
	idle := len(lc.calls) == 0
	lc.mu.Unlock()
	if idle {
		lc.fail(errors.New("closed when idle"))
		lc.forget()
	}
}

// cancel tells the host the call is given up.
func (lc *linesConn) cancel(id uint64) {
	msg := `{"jsonrpc":"2.0","method":"` + methodCancelled + `","params":{"requestId":` + strconv.FormatUint(id, 10) + `,"reason":"the caller gave up"}}` + "\n"
	lc.w.add([]byte(msg), false) // within linesCoalesce: the caller does not wait for the stream
}

// fail ends the stream: every call in flight fails with err, and the next
// call opens a new stream.
func (lc *linesConn) fail(err error) {
	lc.mu.Lock()
	if lc.err != nil {
		lc.mu.Unlock()
		return
	}
	lc.err = err
	calls := lc.calls
	lc.calls, lc.byToken = map[uint64]*linesPending{}, map[string]*linesPending{}
	if lc.idle != nil {
		lc.idle.Stop()
	}
	lc.mu.Unlock()
	_ = lc.s.Reset()
	for _, p := range calls {
		p.done <- answerEvent{err: transport.NewError(fmt.Errorf("the stream to the host broke: %w", err))}
	}
	go lc.w.close()
}

// read hands the host's lines to their calls until the stream ends. It
// never waits for a call: a call's queue that is full drops the
// notification.
func (lc *linesConn) read() {
	r := bufio.NewReader(lc.s)
	for {
		line, err := readLine(r, maxAnswerMessage)
		if err != nil {
			lc.fail(err)
			return
		}
		ev, err := decodeAnswer(line)
		if err != nil {
			lc.fail(err)
			return
		}
		lc.mu.Lock()
		var p *linesPending
		if ev.response {
			if id, err := strconv.ParseUint(string(ev.id), 10, 64); err == nil {
				if p = lc.calls[id]; p != nil {
					delete(lc.calls, id)
					delete(lc.byToken, p.token)
				}
			}
		} else {
			p = lc.byToken[ev.token]
		}
		lc.mu.Unlock()
		switch {
		case p == nil:
		case ev.response:
			p.done <- ev
		default:
			select {
			case p.events <- &ev:
			default:
			}
		}
	}
}

// closeLines closes every lines stream of the client.
func (c *Client) closeLines() {
	c.linesMu.Lock()
	c.closed = true
	slots := c.lines
	c.lines = map[string]*linesSlot{}
	c.linesMu.Unlock()
	for _, slot := range slots {
		slot.mu.Lock()
		if slot.conn != nil {
			slot.conn.fail(errors.New("the client closed"))
		}
		slot.mu.Unlock()
	}
}

// errLineTooLong: a message over its bound.
var errLineTooLong = errors.New("a message longer than this node reads")

// readLine reads one line of at most max bytes (its newline included),
// which is r's own buffer until the next read when it fits there.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append([]byte(nil), line...)
	for {
		line, err = r.ReadSlice('\n')
		if len(buf)+len(line) > max {
			return nil, errLineTooLong
		}
		buf = append(buf, line...)
		if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}
