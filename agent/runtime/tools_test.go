package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// toolServer is a real MCP server (mcp-go, Streamable HTTP) with tools an
// llm agent can call: add, lookup (answers with the server's name), big
// (40 KiB of text) and grow (adds a tool "fresh" and says the list
// changed). It counts tools/call and, if secret is set, answers 401 to
// requests without it in X-Api-Key.
type toolServer struct {
	url   string
	calls atomic.Int64
	// noticed hears each tools/list_changed notice written to a client.
	noticed chan struct{}
}

// noticeWriter is a response writer that says when a tools/list_changed
// notice goes through it.
type noticeWriter struct {
	http.ResponseWriter
	noticed chan struct{}
}

func (w noticeWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if bytes.Contains(p, []byte(mcp.MethodNotificationToolsListChanged)) {
		select {
		case w.noticed <- struct{}{}:
		default:
		}
	}
	return n, err
}

func (w noticeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func newToolServer(t *testing.T, name, secret string) *toolServer {
	t.Helper()
	ts := &toolServer{noticed: make(chan struct{}, 16)}
	s := server.NewMCPServer(name, "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Adds two numbers"), readOnly,
		mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			return mcp.NewToolResultText(fmt.Sprint(req.GetFloat("a", 0) + req.GetFloat("b", 0))), nil
		})
	s.AddTool(mcp.NewTool("lookup", mcp.WithDescription("Looks a word up"), readOnly, mcp.WithString("word", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			return mcp.NewToolResultText(name + " knows " + req.GetString("word", "")), nil
		})
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("Returns a lot"), readOnly),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			return mcp.NewToolResultText(strings.Repeat("x", 40<<10)), nil
		})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Always fails"), readOnly),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			return mcp.NewToolResultError("the oven is cold"), nil
		})
	s.AddTool(mcp.NewTool("hang", mcp.WithDescription("Never answers in time"), readOnly),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
			return mcp.NewToolResultText("too late"), nil
		})
	s.AddTool(mcp.NewTool("grow", mcp.WithDescription("Adds a tool"), readOnly),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ts.calls.Add(1)
			s.AddTool(mcp.NewTool("fresh", mcp.WithDescription("A new tool"), readOnly),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText("fresh!"), nil
				})
			// Said on this call's stream, where the client hears it. The
			// result waits until the notice is written: mcp-go's server
			// may drop a notification still queued when its handler
			// returns, and the client would then learn of the change
			// only when the list's TTL runs out.
			_ = server.ServerFromContext(ctx).SendNotificationToClient(ctx, mcp.MethodNotificationToolsListChanged, nil)
			select {
			case <-ts.noticed:
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
			return mcp.NewToolResultText("grown"), nil
		})
	h := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if secret != "" && r.Header.Get("X-Api-Key") != secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(noticeWriter{w, ts.noticed}, r)
	}))
	t.Cleanup(srv.Close)
	ts.url = srv.URL + "/mcp"
	return ts
}

// readOnly marks a test tool read-only: it runs without approval.
var readOnly = mcp.WithReadOnlyHintAnnotation(true)

// toolAgent is an llm agent with tool servers whose model follows a
// script; each turn runs on the same runtime (its pooled sessions).
type toolAgent struct {
	rt    *runtime.Runtime
	model *fakellm.Server
}

func newToolAgent(t *testing.T, script fakellm.Script, tools []agent.ToolServer, opts runtime.RuntimeOptions) *toolAgent {
	t.Helper()
	model := &fakellm.Server{Model: "demo", Script: script}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo", Tools: tools}
	if err := b.Validate(); err != nil {
		t.Fatalf("backend: %v", err)
	}
	opts.AllowPrivate = true
	if opts.Timeout == 0 {
		opts.Timeout = 20 * time.Second
	}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil }, opts)
	t.Cleanup(func() { _ = rt.Close() })
	return &toolAgent{rt: rt, model: model}
}

func (a *toolAgent) turn(t *testing.T, text string) (string, []agent.Step, error) {
	t.Helper()
	var mu sync.Mutex
	var steps []agent.Step
	reply, err := a.rt.Answer(t.Context(), agent.Turn{AgentID: idSelf, Text: text, Trace: agent.NewTrace(),
		OnStep: func(s agent.Step) { mu.Lock(); steps = append(steps, s); mu.Unlock() }}, func(string) error { return nil })
	return reply, steps, err
}

// offered is the function names and parameters of a request's tools.
func offered(t testing.TB, req fakellm.Request) map[string]json.RawMessage {
	t.Helper()
	out := map[string]json.RawMessage{}
	for _, raw := range req.Tools {
		var tool struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &tool); err != nil || tool.Type != "function" {
			t.Errorf("tool %s: %v", raw, err)
		}
		out[tool.Function.Name] = tool.Function.Parameters
	}
	return out
}

// named is the offered tool whose name ends in "__"+suffix and holds
// part. It runs in the model server's goroutine: it reports, never stops.
func named(t testing.TB, req fakellm.Request, suffix, part string) string {
	t.Helper()
	var names []string
	for name := range offered(t, req) {
		if strings.HasSuffix(name, "__"+suffix) && strings.Contains(name, part) {
			return name
		}
		names = append(names, name)
	}
	t.Errorf("no tool *%s*__%s offered in %v", part, suffix, names)
	return "missing"
}

var openAIName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// TestLLMCallsMCPTool: the model is offered a real MCP server's tool with
// its input schema, calls it (streamed tool_calls), reads the result as a
// tool message and answers from it; the call is a step with its server,
// arguments, result and time.
func TestLLMCallsMCPTool(t *testing.T) {
	ts := newToolServer(t, "calc", "")
	var name string
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: "The sum is " + res[0]}
		}
		name = named(t, req, "add", "")
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("t1", name, map[string]int{"a": 6, "b": 7})}}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{URL: ts.url}}, runtime.RuntimeOptions{})
	reply, steps, err := a.turn(t, "what is 6+7?")
	if err != nil {
		t.Fatal(err)
	}
	if reply != "The sum is 13" {
		t.Errorf("reply %q", reply)
	}
	if !openAIName.MatchString(name) {
		t.Errorf("tool name %q breaks OpenAI's rule", name)
	}
	reqs := a.model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var schema struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(offered(t, reqs[0])[name], &schema); err != nil || schema.Type != "object" || schema.Properties["a"] == nil || len(schema.Required) != 2 {
		t.Errorf("parameters of %s: %+v %v", name, schema, err)
	}
	last := reqs[1].Messages
	if n := len(last); last[n-1].Role != "tool" || last[n-1].ToolCallID != "t1" || last[n-1].Content != "13" {
		t.Errorf("tool message %+v", last[n-1])
	}
	var done []agent.Step
	for _, s := range steps {
		if s.Done {
			done = append(done, s)
		}
	}
	host := strings.TrimPrefix(strings.TrimSuffix(ts.url, "/mcp"), "http://")
	if len(steps) != 2 || len(done) != 1 {
		t.Fatalf("steps %+v", steps)
	}
	s := done[0]
	if s.Tool != runtime.StepToolCall || s.Name != "add" || s.Server != host+"/mcp" || s.Text != `{"a":6,"b":7}` || s.Reply != "13" || s.Error != "" {
		t.Errorf("step %+v", s)
	}
	if ts.calls.Load() != 1 {
		t.Errorf("%d tool calls reached the server", ts.calls.Load())
	}
}

// TestLLMToolFailures: a tool that reports an error and one that does
// not answer within the per-call time are failed steps and tool messages
// the model reads; the turn goes on to an answer.
func TestLLMToolFailures(t *testing.T) {
	ts := newToolServer(t, "flaky", "")
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: strings.Join(res, " | ")}
		}
		return fakellm.Reply{Calls: []fakellm.ToolCall{
			fakellm.Call("c1", named(t, req, "fail", ""), map[string]any{}),
			fakellm.Call("c2", named(t, req, "hang", ""), map[string]any{}),
		}}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{URL: ts.url}}, runtime.RuntimeOptions{ToolCallTimeout: 200 * time.Millisecond})
	reply, steps, err := a.turn(t, "go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "the oven is cold") || !strings.Contains(reply, "no reply in time") {
		t.Errorf("reply %q", reply)
	}
	var failed []string
	for _, s := range steps {
		if s.Done && s.Error != "" {
			failed = append(failed, s.Name+": "+s.Error)
		}
	}
	if len(failed) != 2 || failed[0] != "fail: the oven is cold" || failed[1] != "hang: no reply in time" {
		t.Errorf("failed steps %q", failed)
	}
}

// TestLLMToolNamespacing: two servers with a tool of the same name are
// offered it under two names, each within OpenAI's rule, and each name
// reaches its own server.
func TestLLMToolNamespacing(t *testing.T) {
	one, two := newToolServer(t, "one", ""), newToolServer(t, "two", "")
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: strings.Join(res, " | ")}
		}
		var calls []fakellm.ToolCall
		for name := range offered(t, req) {
			if strings.HasSuffix(name, "__lookup") {
				calls = append(calls, fakellm.Call(fmt.Sprintf("c%d", len(calls)), name, map[string]string{"word": "tea"}))
			}
		}
		return fakellm.Reply{Calls: calls}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{URL: one.url}, {URL: two.url}}, runtime.RuntimeOptions{})
	reply, _, err := a.turn(t, "tea?")
	if err != nil {
		t.Fatal(err)
	}
	names := offered(t, a.model.Requests()[0])
	if len(names) != 12 {
		t.Errorf("offered %d tools, want 6 from each server: %v", len(names), names)
	}
	lookups := 0
	for name := range names {
		if !openAIName.MatchString(name) {
			t.Errorf("tool name %q breaks OpenAI's rule", name)
		}
		if strings.HasSuffix(name, "__lookup") {
			lookups++
		}
	}
	if lookups != 2 || !strings.Contains(reply, "one knows tea") || !strings.Contains(reply, "two knows tea") {
		t.Errorf("%d lookups offered; reply %q", lookups, reply)
	}
	if one.calls.Load() != 1 || two.calls.Load() != 1 {
		t.Errorf("calls: one %d, two %d", one.calls.Load(), two.calls.Load())
	}
}

// TestLLMToolBounds: calls past the turn's budget are refused without
// reaching the server, the model is then told to answer, and a result
// over the byte limit is cut with a note.
func TestLLMToolBounds(t *testing.T) {
	ts := newToolServer(t, "calc", "")
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: "done"}
		}
		add, big := named(t, req, "add", ""), named(t, req, "big", "")
		return fakellm.Reply{Calls: []fakellm.ToolCall{
			fakellm.Call("c1", big, map[string]any{}),
			fakellm.Call("c2", add, map[string]int{"a": 1, "b": 2}),
			fakellm.Call("c3", add, map[string]int{"a": 3, "b": 4}),
		}}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{URL: ts.url}}, runtime.RuntimeOptions{ToolCalls: 2, ToolResultBytes: 4 << 10})
	if _, _, err := a.turn(t, "go"); err != nil {
		t.Fatal(err)
	}
	if ts.calls.Load() != 2 {
		t.Errorf("%d calls reached the server, want 2 (the budget)", ts.calls.Load())
	}
	reqs := a.model.Requests()
	if len(reqs) != 2 || reqs[1].ToolChoice != "none" {
		t.Fatalf("%d requests; the last's tool_choice %q, want none", len(reqs), reqs[len(reqs)-1].ToolChoice)
	}
	res := reqs[1].ToolResults()
	if len(res) != 3 {
		t.Fatalf("tool results %d", len(res))
	}
	if len(res[0]) > 4<<10+200 || !strings.Contains(res[0], "truncated") || !strings.HasPrefix(res[0], "xxxx") {
		t.Errorf("big result: %d bytes, %q…", len(res[0]), res[0][:min(len(res[0]), 40)])
	}
	if res[1] != "3" || !strings.Contains(res[2], "spent") {
		t.Errorf("results %q, %q", res[1], res[2])
	}
}

// TestLLMToolTurnTime: once the turn's time for tools is spent (an
// injected clock says an hour passed), calls are refused without reaching
// the server and the model is told to answer.
func TestLLMToolTurnTime(t *testing.T) {
	ts := newToolServer(t, "calc", "")
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: res[0]}
		}
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", named(t, req, "add", ""), map[string]int{"a": 1, "b": 1})}}
	}
	var ticks atomic.Int64
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return start.Add(time.Duration(min(ticks.Add(1)-1, 1)) * time.Hour) } // open at start, then an hour later
	a := newToolAgent(t, script, []agent.ToolServer{{URL: ts.url}}, runtime.RuntimeOptions{Now: now})
	reply, _, err := a.turn(t, "1+1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "time for tools is spent") || ts.calls.Load() != 0 {
		t.Errorf("reply %q; %d calls reached the server", reply, ts.calls.Load())
	}
	if reqs := a.model.Requests(); reqs[len(reqs)-1].ToolChoice != "none" {
		t.Errorf("the model was not told to answer")
	}
}

// TestLLMToolSecretHeader: the secret goes in the header named (the
// server refuses calls without it) and never into a step.
func TestLLMToolSecretHeader(t *testing.T) {
	const secret = "tool-secret-9c2f"
	ts := newToolServer(t, "locked", secret)
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: res[0]}
		}
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", named(t, req, "lookup", ""), map[string]string{"word": "key"})}}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{URL: ts.url, Header: "X-Api-Key", Secret: secret}}, runtime.RuntimeOptions{})
	reply, steps, err := a.turn(t, "open")
	if err != nil || reply != "locked knows key" {
		t.Fatalf("reply %q, %v", reply, err)
	}
	for _, s := range steps {
		if b, _ := json.Marshal(s); strings.Contains(string(b), secret) {
			t.Errorf("step carries the secret: %s", b)
		}
	}
}

// TestLLMToolListChanged: a server that says its tools changed is listed
// again at the next turn, though its list is younger than the cache's TTL.
func TestLLMToolListChanged(t *testing.T) {
	ts := newToolServer(t, "growing", "")
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: res[0]}
		}
		if req.LastUser() == "grow" {
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", named(t, req, "grow", ""), map[string]any{})}}
		}
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", named(t, req, "fresh", ""), map[string]any{})}}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{URL: ts.url}}, runtime.RuntimeOptions{})
	if reply, _, err := a.turn(t, "grow"); err != nil || reply != "grown" {
		t.Fatalf("first turn %q, %v", reply, err)
	}
	if reply, _, err := a.turn(t, "use it"); err != nil || reply != "fresh!" {
		t.Fatalf("second turn %q, %v", reply, err)
	}
}

// TestLLMAgentAsTool: an agent listed as a tool server is one
// send_message tool, reached by delegation's path (the trace passed on)
// and shown as an ask_agent step with its time.
func TestLLMAgentAsTool(t *testing.T) {
	d := &fakeDelegator{}
	script := func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: "calc says " + res[0]}
		}
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", named(t, req, "send_message", "calculator"), map[string]string{"text": "6*7"})}}
	}
	a := newToolAgent(t, script, []agent.ToolServer{{Agent: idCalc, Allow: []string{"send_message"}}}, runtime.RuntimeOptions{})
	a.rt.Delegator = d
	reply, steps, err := a.turn(t, "6*7?")
	if err != nil || !strings.Contains(reply, "42") {
		t.Fatalf("reply %q, %v", reply, err)
	}
	if len(d.asked) != 1 || d.asked[0] != idCalc || len(d.traces[0].Agents) != 1 || d.traces[0].Agents[0] != idSelf {
		t.Errorf("asked %v, traces %+v", d.asked, d.traces)
	}
	if len(steps) != 2 || !steps[1].Done || steps[1].Tool != runtime.ToolAskAgent || steps[1].AgentName != "Calculator" || steps[1].Reply != "42" {
		t.Errorf("steps %+v", steps)
	}
}
