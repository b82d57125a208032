package peermcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/mcpkit/mcpstream"
)

// sessionSpy is echoAnswerer that counts the turns it answered inside
// mcp-go's server (with a client session in their context).
type sessionSpy struct {
	echoAnswerer
	viaMCPGo *atomic.Int64
}

func (s sessionSpy) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	if server.ClientSessionFromContext(ctx) != nil {
		s.viaMCPGo.Add(1)
	}
	return s.echoAnswerer.Answer(ctx, t, emit)
}

// sseMessages are the JSON-RPC messages of a response, decoded: the SSE
// events' data, or the JSON body.
func sseMessages(t *testing.T, rec *httptest.ResponseRecorder) (string, []any) {
	t.Helper()
	ct := rec.Header().Get("Content-Type")
	var out []any
	decode := func(b string) {
		var v any
		if err := json.Unmarshal([]byte(b), &v); err != nil {
			t.Fatalf("undecodable message %q: %v", b, err)
		}
		out = append(out, v)
	}
	if ct == "application/json" {
		decode(rec.Body.String())
		return ct, out
	}
	for ev := range strings.SplitSeq(rec.Body.String(), "\n\n") {
		if ev = strings.TrimSpace(ev); ev == "" {
			continue
		}
		kind, data, ok := strings.Cut(ev, "\n")
		if kind != "event: message" || !ok || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("unexpected event %q", ev)
		}
		decode(strings.TrimPrefix(data, "data: "))
	}
	return ct, out
}

// TestFastPathAnswersAsMCPGoDoes: a send_message call in MCP 2026-07-28
// with a progress token is answered by the fast path (not through mcp-go's
// server), with the same messages, in the same order, as mcp-go's server
// answers it: a streamed reply, a refusal, a bad trace.
func TestFastPathAnswersAsMCPGoDoes(t *testing.T) {
	h := newTestHost(t)
	var viaMCPGo atomic.Int64
	h.cfg.Answerer = sessionSpy{echoAnswerer: h.cfg.Answerer.(echoAnswerer), viaMCPGo: &viaMCPGo}
	g := NewHandler(h.cfg).(guard)
	call := func(args map[string]any, meta map[string]any) []byte {
		meta["progressToken"] = "t7"
		meta[mcp.MetaKeyProtocolVersion] = fastVersion
		meta["io.modelcontextprotocol/clientCapabilities"] = map[string]any{}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 42, "method": "tools/call",
			"params": map[string]any{"name": ToolName, "arguments": args, "_meta": meta}})
		return b
	}
	serve := func(hd http.Handler, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(mcp.HeaderProtocolVersion, fastVersion)
		r.Header.Set(mcp.HeaderMethod, "tools/call")
		r.Header.Set(mcp.HeaderName, ToolName)
		rec := httptest.NewRecorder()
		hd.ServeHTTP(rec, r)
		return rec
	}
	mcpGo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.next.ServeHTTP(mcpstream.CountFlushes(w, r)) })
	for name, body := range map[string][]byte{
		"streamed":  call(map[string]any{"agent_id": h.echo, "text": "hello there you", "history": []any{map[string]any{"role": "user", "text": "a"}}}, map[string]any{agent.TraceMetaKey: map[string]any{"id": "tr1"}}),
		"refused":   call(map[string]any{"agent_id": h.missing, "text": "x"}, map[string]any{}),
		"bad trace": call(map[string]any{"agent_id": h.echo, "text": "x"}, map[string]any{agent.TraceMetaKey: map[string]any{"id": ""}}),
		"rejected":  call(map[string]any{"agent_id": h.rejects, "text": "x"}, map[string]any{agent.TraceMetaKey: map[string]any{"id": "tr2"}}),
	} {
		before := viaMCPGo.Load()
		fastCT, fast := sseMessages(t, serve(g, body))
		if viaMCPGo.Load() != before {
			t.Errorf("%s: the call went through mcp-go's server", name)
		}
		slowCT, slow := sseMessages(t, serve(mcpGo, body))
		if fastCT != slowCT || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s: the fast path answered\n%s %v\nmcp-go's server\n%s %v", name, fastCT, fast, slowCT, slow)
		}
	}
	if viaMCPGo.Load() != 2 { // the streamed and the rejected calls, on mcp-go's server
		t.Errorf("%d turns answered through mcp-go's server, want 2", viaMCPGo.Load())
	}
}

// TestLegacyProtocolStillServed: a calling node whose MCP speaks only the
// versions before 2026-07-28 (initialize, a session-less stateless server)
// still gets its turns answered, streamed, through mcp-go's server.
func TestLegacyProtocolStillServed(t *testing.T) {
	h := newTestHost(t)
	var viaMCPGo atomic.Int64
	h.cfg.Answerer = sessionSpy{echoAnswerer: h.cfg.Answerer.(echoAnswerer), viaMCPGo: &viaMCPGo}
	srv := httptest.NewServer(NewHandler(h.cfg))
	defer srv.Close()
	tr, err := transport.NewStreamableHTTP(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithLegacyProtocolOnly())
	defer c.Close()
	var chunks []string
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if msg, ok := n.Params.AdditionalFields["message"].(string); ok {
			chunks = append(chunks, msg)
		}
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	req.Params.Arguments = map[string]any{"agent_id": h.echo, "text": "old nodes too"}
	req.Params.Meta = &mcp.Meta{ProgressToken: "t1"}
	res, err := c.CallTool(t.Context(), req)
	if err != nil || res.IsError || resultText(res) != "old nodes too" {
		t.Fatalf("CallTool = %+v, %v", res, err)
	}
	if got := strings.Join(chunks, ""); got != "old nodes too" {
		t.Errorf("streamed %q", got)
	}
	if viaMCPGo.Load() != 1 {
		t.Errorf("the legacy call was not answered by mcp-go's server")
	}
}

// TestEncodeResultAsMCPGoDoes: the handler's results encode to the bytes
// mcp-go's encoding makes of them, the lean way or not.
func TestEncodeResultAsMCPGoDoes(t *testing.T) {
	server := mcp.Implementation{Name: serverName, Version: "test"}
	withMeta := func(res *mcp.CallToolResult, fields map[string]any) *mcp.CallToolResult {
		res.Meta = &mcp.Meta{AdditionalFields: fields}
		res.ResultType = mcp.ResultTypeComplete
		return res
	}
	tr := agent.NewTrace()
	for name, res := range map[string]*mcp.CallToolResult{
		"a reply": withMeta(mcp.NewToolResultText("hello <there> & \u2028 you"), map[string]any{agent.TraceMetaKey: tr, mcp.MetaKeyServerInfo: server}),
		"history unread": withMeta(mcp.NewToolResultText("hi"), map[string]any{agent.TraceMetaKey: tr, mcp.MetaKeyServerInfo: server,
			historyMetaKey: historyUnreadValue}),
		"a refusal":   withMeta(toolError(errPeerBusy, "detail"), map[string]any{agent.TraceMetaKey: tr, mcp.MetaKeyServerInfo: server}),
		"another key": withMeta(mcp.NewToolResultText("x"), map[string]any{"other": 1, mcp.MetaKeyServerInfo: server}),
		"no meta":     mcp.NewToolResultText("x"),
	} {
		got, err := encodeResult(res)
		want, werr := json.Marshal(res)
		if err != nil || werr != nil || string(got) != string(want) {
			t.Errorf("%s: encodeResult = %s, %v\nwant %s, %v", name, got, err, want, werr)
		}
	}
}
