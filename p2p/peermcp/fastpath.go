package peermcp

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// The fast path: the host answers the one call that matters, a
// send_message tools/call in MCP 2026-07-28 with a progress token (what
// every calling node sends for every turn), itself, with the same bytes on
// the wire as mcp-go's Streamable HTTP server writes: the progress
// notifications as SSE events, then the result, or the result alone as
// JSON when nothing was streamed. mcp-go decodes such a request half a
// dozen times over (the envelope, the era, the header checks, the params,
// the _meta, the arguments): that was half the host's CPU in a remote turn
// (BENCHMARKS.md, "Chat turns across nodes cost what local ones do"). Here
// it is decoded once. Any other request (discovery, an older protocol
// version, a malformed call that deserves mcp-go's exact error) goes to
// mcp-go's server as before.

// fastVersion is the protocol version the fast path answers.
const fastVersion = mcp.ProtocolVersion20260728

// fastCall is a send_message call, decoded in one pass.
type fastCall struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string   `json:"name"`
		Arguments turnArgs `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
			Trace         json.RawMessage `json:"agentsite/trace"`
			Version       string          `json:"io.modelcontextprotocol/protocolVersion"`
		} `json:"_meta"`
		// RequestID is the call a notifications/cancelled ends (the lines
		// protocol).
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// serveCall answers r if it is a call the fast path takes, and reports
// whether it did; body is r's, read already.
func (h *handler) serveCall(w http.ResponseWriter, r *http.Request, body []byte) bool {
	hd := r.Header
	if hd.Get(mcp.HeaderProtocolVersion) != fastVersion || hd.Get(mcp.HeaderMethod) != string(mcp.MethodToolsCall) ||
		hd.Get(mcp.HeaderName) != ToolName || hd.Get(mcp.HeaderLastEventID) != "" {
		return false
	}
	if mt, _, err := mime.ParseMediaType(hd.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	var call fastCall
	if json.Unmarshal(body, &call) != nil || call.JSONRPC != "2.0" || call.Method != string(mcp.MethodToolsCall) ||
		call.Params.Name != ToolName || call.Params.Meta.Version != fastVersion ||
		!scalar(call.ID) || !scalar(call.Params.Meta.ProgressToken) {
		return false
	}
	ctx := withCaller(r.Context(), r)
	st := &sseStream{w: w, token: call.Params.Meta.ProgressToken}
	st.finish(call.ID, h.answerFast(ctx, &call, st))
	return true
}

// answerFast answers a decoded call, streaming to st, and returns its
// result as JSON.
func (h *handler) answerFast(ctx context.Context, call *fastCall, st notifier) []byte {
	trace, traceOK := agent.NewTrace(), true
	if t := call.Params.Meta.Trace; len(t) > 0 && !bytes.Equal(t, []byte("null")) {
		var got agent.Trace
		switch {
		case json.Unmarshal(t, &got) != nil || got.ID == "" || !got.Valid():
			traceOK = false
		default:
			trace = got
		}
	}
	res := h.answer(ctx, &call.Params.Arguments, trace, traceOK, func() notifier { return st })
	if res.Meta == nil {
		res.Meta = &mcp.Meta{}
	}
	if res.Meta.AdditionalFields == nil {
		res.Meta.AdditionalFields = map[string]any{}
	}
	res.Meta.AdditionalFields[mcp.MetaKeyServerInfo] = mcp.Implementation{Name: serverName, Version: h.cfg.Version}
	res.ResultType = mcp.ResultTypeComplete
	out, err := encodeResult(res)
	if err != nil {
		h.cfg.Logger.ErrorContext(ctx, "peer MCP: encoding a result failed", "err", err)
		out = []byte(`{"content":[{"type":"text","text":"The agent's node failed; try again later."}],"isError":true,"resultType":"complete"}`)
	}
	return out
}

// resultJSON is a send_message result as mcp-go's CallToolResult and Meta
// encode one (maps, so their keys sorted: the fields below are in that
// order), without building those maps.
type resultJSON struct {
	Meta struct {
		History any `json:"agentsite/history,omitempty"`
		Trace   any `json:"agentsite/trace,omitempty"`
		Server  any `json:"io.modelcontextprotocol/serverInfo,omitempty"`
	} `json:"_meta"`
	Content           []textJSON `json:"content"`
	IsError           bool       `json:"isError,omitempty"`
	ResultType        string     `json:"resultType,omitempty"`
	StructuredContent any        `json:"structuredContent,omitempty"`
}

// textJSON is mcp.TextContent without annotations or _meta.
type textJSON struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// encodeResult encodes res as json.Marshal does, directly when it holds
// what the handler's results hold (text content, the _meta keys it sets),
// else through json.Marshal.
func encodeResult(res *mcp.CallToolResult) ([]byte, error) {
	var out resultJSON
	lean := res.Meta != nil && res.Meta.ProgressToken == nil && len(res.RawStructuredContent) == 0 &&
		len(res.InputRequests) == 0 && res.RequestState == ""
	if !lean {
		return json.Marshal(res)
	}
	for k, v := range res.Meta.AdditionalFields {
		switch k {
		case historyMetaKey:
			out.Meta.History = v
		case agent.TraceMetaKey:
			out.Meta.Trace = v
		case mcp.MetaKeyServerInfo:
			out.Meta.Server = v
		default:
			lean = false
		}
		if v == nil {
			lean = false // omitempty would drop what a map keeps
		}
	}
	out.Content = make([]textJSON, 0, len(res.Content))
	for _, c := range res.Content {
		t, ok := c.(mcp.TextContent)
		if !ok || t.Meta != nil || t.Annotations != nil {
			lean = false
			break
		}
		out.Content = append(out.Content, textJSON{Type: t.Type, Text: t.Text})
	}
	if !lean {
		return json.Marshal(res)
	}
	out.IsError, out.ResultType, out.StructuredContent = res.IsError, string(res.ResultType), res.StructuredContent
	return json.Marshal(out)
}

// scalar reports whether raw is a JSON string or number: a request id or
// progress token the fast path echoes as it came.
func scalar(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || (c >= '0' && c <= '9'):
		return true
	}
	return false
}

// sseStream is a fast-path call's response: the notifications as SSE
// events as they come (the response becomes an event stream with the
// first), then the JSON-RPC result, as an event or, when nothing was
// streamed, as the JSON body.
type sseStream struct {
	w     http.ResponseWriter
	token json.RawMessage
	mu    sync.Mutex
	sent  int64 // progress counts chunks and events, as mcpstream's
	sse   bool
	err   error  // the first write that failed: the caller is gone
	msg   []byte // the notification being written
}

// progressParams are a progress notification's params.
type progressParams struct {
	Message       string          `json:"message"`
	Progress      int64           `json:"progress"`
	ProgressToken json.RawMessage `json:"progressToken"`
}

// Emit implements notifier: a chunk as a progress notification.
func (s *sseStream) Emit(chunk string) error {
	if chunk == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent++
	return s.notifyLocked(string(mcp.MethodNotificationProgress), progressParams{Message: chunk, Progress: s.sent, ProgressToken: s.token})
}

// Notify implements notifier.
func (s *sseStream) Notify(method string, params map[string]any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	params["progressToken"] = s.token
	s.sent++
	return s.notifyLocked(method, params)
}

// Drain implements notifier: every event is flushed as it is written.
func (s *sseStream) Drain() {}

func (s *sseStream) notifyLocked(method string, params any) error {
	if s.err != nil {
		return nil // the turn goes on; its result will not be read either
	}
	msg, err := appendNotification(s.msg[:0], method, params)
	if err != nil {
		return nil
	}
	s.msg = msg
	s.writeEventLocked(msg)
	return nil
}

// appendNotification appends the JSON-RPC notification of method with
// params to dst.
func appendNotification(dst []byte, method string, params any) ([]byte, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return dst, err
	}
	m, _ := json.Marshal(method)
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	dst = append(dst, m...)
	dst = append(dst, `,"params":`...)
	dst = append(dst, p...)
	return append(dst, '}'), nil
}

// appendResponse appends the JSON-RPC response to id with result (JSON)
// to dst.
func appendResponse(dst []byte, id json.RawMessage, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// writeEventLocked writes msg as an SSE event, starting the event stream
// if this is the first, and flushes it.
func (s *sseStream) writeEventLocked(msg []byte) {
	if !s.sse {
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		s.w.WriteHeader(http.StatusOK)
		s.sse = true
	}
	var ev bytes.Buffer
	ev.Grow(len(msg) + 24)
	ev.WriteString("event: message\ndata: ")
	ev.Write(msg)
	ev.WriteString("\n\n")
	if _, err := s.w.Write(ev.Bytes()); err != nil {
		s.err = err
		return
	}
	if err := http.NewResponseController(s.w).Flush(); err != nil {
		s.err = err
	}
}

// finish writes the call's result.
func (s *sseStream) finish(id json.RawMessage, result []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := appendResponse(make([]byte, 0, len(result)+48), id, result)
	if s.sse {
		if s.err == nil {
			s.writeEventLocked(b)
		}
		return
	}
	b = append(b, '\n')
	h := s.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	s.w.WriteHeader(http.StatusOK)
	_, _ = s.w.Write(b)
}
