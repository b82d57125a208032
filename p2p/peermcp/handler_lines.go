package peermcp

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// The host's side of the lines protocol (client_lines.go says what it is).

// Bounds of the lines protocol at the host.
const (
	// linesIdle is how long a stream may go without a line from its
	// caller (callers close theirs after clientIdle).
	linesIdle = 2 * clientIdle
	// MaxLinesPerPeer bounds the calls one peer may have in flight here,
	// over all its streams: a portal forwards many people's turns, so it
	// is many people's worth, and the per-peer rate (HandlerConfig.Allow)
	// is the budget over time.
	MaxLinesPerPeer = 256
)

// LinesHandler answers send_message calls in the lines protocol.
type LinesHandler struct {
	h       *handler
	perPeer int // MaxLinesPerPeer; tests set less

	mu       sync.Mutex
	inFlight map[string]int // by caller
}

// NewLinesHandler is the host's lines-protocol side (p2p.Node.ServeMCPLines),
// answering as NewHandler's does.
func NewLinesHandler(cfg HandlerConfig) *LinesHandler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &LinesHandler{h: &handler{cfg: cfg}, perPeer: MaxLinesPerPeer, inFlight: map[string]int{}}
}

// JSON-RPC error codes the lines protocol answers with.
const (
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
)

// methodCancelled is MCP's notification that a request is given up.
const methodCancelled = "notifications/cancelled"

// errPeerBusy answers a call over the caller's bound of calls in flight.
var errPeerBusy = agent.ErrAgentBusy.With("This node is answering as many messages from yours as it takes at once; try again in a moment.")

// ServeStream answers the calls on s from caller ("peer:<id>") until the
// caller closes it, it breaks, or it stays idle for linesIdle; ctx ends
// with the node. A line that is not JSON-RPC resets the stream.
func (l *LinesHandler) ServeStream(ctx context.Context, caller string, s network.Stream) {
	// When the node shuts down the stream is reset at once: its calls
	// end as a host that went away, not as turns it answered "canceled".
	defer context.AfterFunc(ctx, func() { _ = s.Reset() })()
	ctx, cancel := context.WithCancel(context.WithValue(ctx, callerKey{}, caller))
	w := newLineWriter(s, func() { _ = s.Reset(); cancel() })
	var (
		mu    sync.Mutex
		calls = map[string]context.CancelFunc{} // in flight, by id
		wg    sync.WaitGroup
	)
	defer func() {
		cancel()
		wg.Wait()
		w.close()
		_ = s.Close()
	}()
	r := bufio.NewReader(s)
	for {
		_ = s.SetReadDeadline(time.Now().Add(linesIdle))
		line, err := readLine(r, MaxBodyBytes)
		if err != nil {
			return
		}
		var call fastCall
		if json.Unmarshal(line, &call) != nil || call.JSONRPC != "2.0" {
			_ = s.Reset()
			return
		}
		if call.Method == methodCancelled {
			mu.Lock()
			if stop, ok := calls[string(call.Params.RequestID)]; ok {
				stop()
			}
			mu.Unlock()
			continue
		}
		if !scalar(call.ID) {
			continue // another notification: nothing to answer
		}
		if call.Method != string(mcp.MethodToolsCall) || call.Params.Name != ToolName || !scalar(call.Params.Meta.ProgressToken) {
			w.add(rpcError(call.ID, rpcMethodNotFound, "this protocol answers send_message calls with a progress token; call the rest on "+agent.MCPProtocol), true)
			continue
		}
		id := string(call.ID)
		mu.Lock()
		_, dup := calls[id]
		mu.Unlock()
		if dup {
			w.add(rpcError(call.ID, rpcInvalidRequest, "a call with this id is in flight on this stream"), true)
			continue
		}
		if !l.acquire(caller) {
			w.add(l.response(call.ID, toolError(errPeerBusy, "")), true)
			continue
		}
		cctx, stop := context.WithCancel(ctx)
		mu.Lock()
		calls[id] = stop
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.release(caller)
			out := &lineStream{w: w, token: call.Params.Meta.ProgressToken}
			res := l.h.answerFast(cctx, &call, out)
			mu.Lock()
			delete(calls, id)
			mu.Unlock()
			stop()
			w.add(append(appendResponse(nil, call.ID, res), '\n'), true)
		}()
	}
}

// acquire counts a call of caller in flight, if under its bound.
func (l *LinesHandler) acquire(caller string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[caller] >= l.perPeer {
		return false
	}
	l.inFlight[caller]++
	return true
}

// held is how many calls caller has in flight (tests).
func (l *LinesHandler) held(caller string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inFlight[caller]
}

func (l *LinesHandler) release(caller string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[caller]--; l.inFlight[caller] <= 0 {
		delete(l.inFlight, caller)
	}
}

// response is the JSON-RPC response line of a result.
func (l *LinesHandler) response(id json.RawMessage, res *mcp.CallToolResult) []byte {
	out, err := json.Marshal(res)
	if err != nil {
		out = []byte(`{"content":[],"isError":true}`)
	}
	return append(appendResponse(nil, id, out), '\n')
}

// rpcError is a JSON-RPC error response line.
func rpcError(id json.RawMessage, code int, message string) []byte {
	m, _ := json.Marshal(message)
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = append(b, m...)
	return append(b, "}}\n"...)
}

// methodChunks is the lines protocol's notification of several chunks of
// a reply at once, in order: {"progressToken", "progress" (the last
// chunk's count), "chunks": [...]}. A caller passes each on as a progress
// notification's chunk would be.
const methodChunks = "notifications/agentsite/chunks"

// lineStream is one call's notifier on its stream's writer. The chunks the
// agent streams within linesCoalesce of each other go as one
// notifications/agentsite/chunks, each chunk kept as it was: a fast
// agent's reply is one notification and the response, a slow one's
// chunks go one by one as they come.
type lineStream struct {
	w     *lineWriter
	token json.RawMessage

	mu      sync.Mutex
	sent    int64    // progress counts chunks and events, as sseStream's
	pending []string // chunks not yet sent
	timer   *time.Timer
	armed   bool
}

// chunksParams are a notifications/agentsite/chunks's params.
type chunksParams struct {
	Chunks        []string        `json:"chunks"`
	Progress      int64           `json:"progress"`
	ProgressToken json.RawMessage `json:"progressToken"`
}

// Emit implements notifier: a chunk, sent within linesCoalesce with any
// that follow it.
func (s *lineStream) Emit(chunk string) error {
	if chunk == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, chunk)
	switch {
	case s.armed:
	case s.timer == nil:
		s.timer = time.AfterFunc(linesCoalesce, s.flush)
	default:
		s.timer.Reset(linesCoalesce)
	}
	s.armed = true
	return nil
}

// Notify implements notifier: after the chunks before it.
func (s *lineStream) Notify(method string, params map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(false)
	params["progressToken"] = s.token
	s.sent++
	s.addLocked(method, params, true)
	return nil
}

// Drain implements notifier: the chunks not yet sent go before the
// response, in the same write.
func (s *lineStream) Drain() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.timer != nil {
		s.timer.Stop()
	}
	s.flushLocked(false)
}

func (s *lineStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushLocked(true)
}

// flushLocked sends the pending chunks, at once if urgent, else with the
// next line that is: one alone as a progress notification, more as
// notifications/agentsite/chunks.
func (s *lineStream) flushLocked(urgent bool) {
	s.armed = false
	switch len(s.pending) {
	case 0:
		return
	case 1:
		s.sent++
		s.addLocked(string(mcp.MethodNotificationProgress), progressParams{Message: s.pending[0], Progress: s.sent, ProgressToken: s.token}, urgent)
	default:
		s.sent += int64(len(s.pending))
		s.addLocked(methodChunks, chunksParams{Chunks: s.pending, Progress: s.sent, ProgressToken: s.token}, urgent)
	}
	s.pending = s.pending[:0]
}

func (s *lineStream) addLocked(method string, params any, urgent bool) {
	b, err := appendNotification(nil, method, params)
	if err != nil {
		return
	}
	// A writer that ended drops it: the turn goes on, its answer will not
	// be read either.
	s.w.add(append(b, '\n'), urgent)
}
