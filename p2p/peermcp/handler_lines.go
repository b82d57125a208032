package peermcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// The host's side of the lines protocol (client_lines.go says what it is).

// Bounds of a lines call at the host.
const (
	// linesRequestWait is how long the request line may take to arrive.
	linesRequestWait = 10 * time.Second
	// linesWriteWait is how long one write of the answer may block (the
	// caller stopped reading): past it the answer is dropped and the
	// stream reset.
	linesWriteWait = 30 * time.Second
	// linesCoalesce is how long a written notification may wait for the
	// next ones, to go out in one write with them: a fast agent's whole
	// answer leaves in one write, a slow one's chunks each this late.
	linesCoalesce = time.Millisecond
)

// LinesHandler answers send_message calls in the lines protocol.
type LinesHandler struct{ h *handler }

// NewLinesHandler is the host's lines-protocol side (p2p.Node.ServeMCPLines),
// answering as NewHandler's does.
func NewLinesHandler(cfg HandlerConfig) *LinesHandler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &LinesHandler{h: &handler{cfg: cfg}}
}

// JSON-RPC error codes the lines protocol answers with.
const (
	rpcParseError     = -32700
	rpcMethodNotFound = -32601
)

// ServeStream answers the one call on s from caller ("peer:<id>") and
// closes s. ctx ends with the node.
func (l *LinesHandler) ServeStream(ctx context.Context, caller string, s network.Stream) {
	_ = s.SetReadDeadline(time.Now().Add(linesRequestWait))
	r := bufio.NewReader(io.LimitReader(s, MaxBodyBytes+1))
	line, err := readLine(r, MaxBodyBytes)
	if err != nil {
		_ = s.Reset()
		return
	}
	var call fastCall
	if err := json.Unmarshal(line, &call); err != nil || call.JSONRPC != "2.0" || !scalar(call.ID) {
		l.refuse(s, nil, rpcParseError, "not a JSON-RPC request")
		return
	}
	if call.Method != string(mcp.MethodToolsCall) || call.Params.Name != ToolName || !scalar(call.Params.Meta.ProgressToken) {
		l.refuse(s, call.ID, rpcMethodNotFound, "this protocol answers send_message calls with a progress token; call the rest on "+agent.MCPProtocol)
		return
	}
	if r.Buffered() > 0 {
		_ = s.Reset() // one call a stream
		return
	}
	ctx, cancel := context.WithCancel(context.WithValue(ctx, callerKey{}, caller))
	defer cancel()
	_ = s.SetReadDeadline(time.Time{})
	// The caller keeps its side open until the answer: anything it does
	// before (closing, resetting, sending more) ends the turn, and more
	// bytes the stream.
	go func() {
		var b [1]byte
		if n, _ := s.Read(b[:]); n > 0 {
			_ = s.Reset()
		}
		cancel()
	}()
	out := newLineStream(s, call.Params.Meta.ProgressToken)
	out.finish(call.ID, l.h.answerFast(ctx, &call, out))
}

// refuse answers a request the protocol does not take with a JSON-RPC
// error, and closes s.
func (l *LinesHandler) refuse(s network.Stream, id json.RawMessage, code int, message string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": message}})
	_ = s.SetWriteDeadline(time.Now().Add(linesWriteWait))
	_, _ = s.Write(append(msg, '\n'))
	_ = s.Close()
}

// lineWriter is what a lineStream writes to (a network.Stream).
type lineWriter interface {
	io.Writer
	SetWriteDeadline(time.Time) error
	Close() error
	Reset() error
}

// lineStream is a lines call's answer: its notifications, a line each,
// written at most linesCoalesce after they were made, together with any
// made meanwhile; then the response, with whatever is still unwritten.
type lineStream struct {
	w     lineWriter
	token json.RawMessage

	mu      sync.Mutex // guards what follows
	sent    int64      // progress counts chunks and events, as sseStream's
	buf     []byte     // lines not yet written
	timer   *time.Timer
	pending bool // the timer runs for buf
	failed  bool // a write failed: the caller is gone

	wmu sync.Mutex // one write at a time, in order
}

func newLineStream(w lineWriter, token json.RawMessage) *lineStream {
	return &lineStream{w: w, token: token}
}

// Emit implements notifier: a chunk as a progress notification.
func (s *lineStream) Emit(chunk string) error {
	if chunk == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	s.notifyLocked(string(mcp.MethodNotificationProgress), progressParams{Message: chunk, Progress: s.sent, ProgressToken: s.token})
	return nil
}

// Notify implements notifier.
func (s *lineStream) Notify(method string, params map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	params["progressToken"] = s.token
	s.sent++
	s.notifyLocked(method, params)
	return nil
}

// Drain implements notifier: the response goes after every notification.
func (s *lineStream) Drain() {}

func (s *lineStream) notifyLocked(method string, params any) {
	if s.failed {
		return // the turn goes on; its answer will not be read either
	}
	b, err := appendNotification(s.buf, method, params)
	if err != nil {
		return
	}
	s.buf = append(b, '\n')
	switch {
	case s.pending:
	case s.timer == nil:
		s.timer = time.AfterFunc(linesCoalesce, s.flush)
	default:
		s.timer.Reset(linesCoalesce)
	}
	s.pending = true
}

// flush writes what is waiting.
func (s *lineStream) flush() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	b := s.buf
	s.buf, s.pending = nil, false
	s.mu.Unlock()
	s.write(b)
}

// write writes b (wmu held); a failure ends the answer.
func (s *lineStream) write(b []byte) {
	if len(b) == 0 {
		return
	}
	_ = s.w.SetWriteDeadline(time.Now().Add(linesWriteWait))
	if _, err := s.w.Write(b); err != nil {
		s.mu.Lock()
		s.failed = true
		s.mu.Unlock()
	}
}

// finish writes the response to id with result after what is waiting,
// and closes the stream (resets it when a write failed).
func (s *lineStream) finish(id json.RawMessage, result []byte) {
	s.mu.Lock()
	if s.timer != nil {
		s.timer.Stop()
	}
	b := append(appendResponse(s.buf, id, result), '\n')
	s.buf, s.pending = nil, false
	s.mu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	failed := s.failed
	s.mu.Unlock()
	if !failed {
		s.write(b)
	}
	s.mu.Lock()
	failed = s.failed
	s.mu.Unlock()
	if failed {
		_ = s.w.Reset()
		return
	}
	_ = s.w.Close()
}
