package peermcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// testID is a valid agent id for name.
func testID(t *testing.T, name string) string {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	id, err := agent.DeriveID(key.GetPublic(), name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// fakeAgents hosts the agents it maps to their owners.
type fakeAgents map[string]string

func (f fakeAgents) HostedAgent(_ context.Context, id string) (agent.Record, error) {
	owner, ok := f[id]
	if !ok {
		return agent.Record{}, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, id)
	}
	return agent.Record{ID: id, Owner: owner}, nil
}

// publicError is a failure with a summary for the caller, as the
// runtime's BackendError has.
type publicError struct {
	kind   *agent.Error
	public string
}

func (e *publicError) Error() string { return e.kind.Error() + ": " + e.public }
func (e *publicError) Unwrap() error { return e.kind }

func publicDetail(err error) string {
	var pe *publicError
	if errors.As(err, &pe) {
		return pe.public
	}
	return ""
}

// echoAnswerer streams the text word by word, or fails with fail's error
// for the agent.
type echoAnswerer struct{ fail map[string]error }

func (a echoAnswerer) Answer(_ context.Context, t agent.Turn, emit func(string) error) (string, error) {
	if err := a.fail[t.AgentID]; err != nil {
		return "", err
	}
	for _, w := range strings.SplitAfter(t.Text, " ") {
		if err := emit(w); err != nil {
			return "", err
		}
	}
	return t.Text, nil
}

// testHost is what a test's host serves: echo (owner ""), alices (owner
// alice), and agents whose turns fail.
type testHost struct {
	echo, alices, rejects, slow, missing string
	cfg                                  HandlerConfig
}

func newTestHost(t *testing.T) *testHost {
	h := &testHost{echo: testID(t, "echo"), alices: testID(t, "alices"), rejects: testID(t, "rejects"),
		slow: testID(t, "slow"), missing: testID(t, "missing")}
	h.cfg = HandlerConfig{
		Agents: fakeAgents{h.echo: "", h.alices: "alice", h.rejects: "", h.slow: ""},
		Answerer: echoAnswerer{fail: map[string]error{
			h.rejects: &publicError{kind: agent.ErrBackendRejected, public: "HTTP 403 Forbidden"},
			h.slow:    fmt.Errorf("llm backend: %w", context.DeadlineExceeded),
		}},
		Detail:  publicDetail,
		Version: "test",
	}
	return h
}

// mcpSession is an mcp-go client of a handler on plain HTTP, which
// collects the progress messages of each token.
type mcpSession struct {
	c        *client.Client
	mu       sync.Mutex
	progress map[string][]string
}

func connect(t *testing.T, url string) *mcpSession {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url)
	if err != nil {
		t.Fatal(err)
	}
	s := &mcpSession{c: client.NewClient(tr), progress: map[string][]string{}}
	t.Cleanup(func() { _ = s.c.Close() })
	if err := s.c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		tok, _ := n.Params.AdditionalFields["progressToken"].(string)
		msg, _ := n.Params.AdditionalFields["message"].(string)
		s.mu.Lock()
		s.progress[tok] = append(s.progress[tok], msg)
		s.mu.Unlock()
	})
	if _, err := s.c.Initialize(t.Context(), mcp.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	return s
}

// call sends send_message with args; token "" asks for no progress.
func (s *mcpSession) call(t *testing.T, args map[string]any, token string) *mcp.CallToolResult {
	t.Helper()
	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	req.Params.Arguments = args
	if token != "" {
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
	}
	res, err := s.c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// errorCode is the code of a tool error, "" for a result.
func errorCode(t *testing.T, res *mcp.CallToolResult) agent.Code {
	t.Helper()
	if !res.IsError {
		return ""
	}
	var re *RemoteError
	if !errors.As(remoteError(res), &re) {
		t.Fatal("no RemoteError")
	}
	return re.Code
}

func TestHandler(t *testing.T) {
	h := newTestHost(t)
	ts := httptest.NewServer(NewHandler(h.cfg))
	t.Cleanup(ts.Close)
	s := connect(t, ts.URL)

	tools, err := s.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != ToolName {
		t.Fatalf("peer tools = %+v, %v", tools, err)
	}
	history := []map[string]string{{"role": "user", "text": "earlier"}, {"role": "agent", "text": "earlier"}}
	res := s.call(t, map[string]any{"agent_id": h.echo, "text": "one two three", "history": history}, "p1")
	s.mu.Lock()
	chunks := s.progress["p1"]
	s.mu.Unlock()
	if res.IsError || resultText(res) != "one two three" || strings.Join(chunks, "") != "one two three" {
		t.Fatalf("send_message = %q, chunks %q", resultText(res), chunks)
	}

	tooMany := make([]map[string]string, MaxHistory+1)
	for i := range tooMany {
		tooMany[i] = map[string]string{"role": "user", "text": "x"}
	}
	for name, tc := range map[string]struct {
		args map[string]any
		want agent.Code
	}{
		"not hosted":       {map[string]any{"agent_id": h.missing, "text": "hi"}, agent.CodeUnknownAgent},
		"not an id":        {map[string]any{"agent_id": "nope", "text": "hi"}, agent.CodeUnknownAgent},
		"empty text":       {map[string]any{"agent_id": h.echo, "text": "  "}, CodeBadArguments},
		"text too long":    {map[string]any{"agent_id": h.echo, "text": strings.Repeat("x", MaxTextBytes+1)}, CodeBadArguments},
		"bad role":         {map[string]any{"agent_id": h.echo, "text": "hi", "history": []map[string]string{{"role": "system", "text": "x"}}}, CodeBadArguments},
		"history too big":  {map[string]any{"agent_id": h.echo, "text": "hi", "history": tooMany}, CodeBadArguments},
		"wrong types":      {map[string]any{"agent_id": 7, "text": "hi"}, CodeBadArguments},
		"backend refused":  {map[string]any{"agent_id": h.rejects, "text": "hi"}, agent.CodeAgentRejected},
		"backend too slow": {map[string]any{"agent_id": h.slow, "text": "hi"}, agent.CodeAgentTimeout},
	} {
		if got := errorCode(t, s.call(t, tc.args, "")); got != tc.want {
			t.Errorf("%s: code %q, want %q", name, got, tc.want)
		}
	}
	res = s.call(t, map[string]any{"agent_id": h.rejects, "text": "hi"}, "")
	if re := remoteError(res).(*RemoteError); re.Detail != "HTTP 403 Forbidden" {
		t.Errorf("the backend's public detail did not come along: %+v", re)
	}

	// Not served to the public: no Origin check needed, but the body cap holds.
	big := bytes.Repeat([]byte("x"), MaxBodyBytes+1)
	resp, err := http.Post(ts.URL, "application/json", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized peer body: %d", resp.StatusCode)
	}
}

// TestHandlerRefusesTurnAfterOwnerChange: a calling node with a stale
// cache names the owner its conversation is bound to; the host refuses the
// turn when its record has another owner.
func TestHandlerRefusesTurnAfterOwnerChange(t *testing.T) {
	h := newTestHost(t)
	ts := httptest.NewServer(NewHandler(h.cfg))
	t.Cleanup(ts.Close)
	s := connect(t, ts.URL)
	history := []map[string]string{{"role": "user", "text": "my PIN is 4921"}, {"role": "agent", "text": "noted"}}

	res := s.call(t, map[string]any{"agent_id": h.echo, "text": "PIN?", "history": history, "owner": "alice"}, "")
	if code := errorCode(t, res); code != agent.CodeOwnerChanged {
		t.Errorf("turn bound to alice, agent now the operator's: code %q; want agent_changed_owner", code)
	}
	for name, args := range map[string]map[string]any{
		"same owner":              {"agent_id": h.echo, "text": "hi", "history": history, "owner": ""},
		"alice's agent":           {"agent_id": h.alices, "text": "hi", "owner": "alice"},
		"a caller without owners": {"agent_id": h.echo, "text": "hi"},
	} {
		if res := s.call(t, args, ""); res.IsError || resultText(res) != "hi" {
			t.Errorf("%s: %q", name, resultText(res))
		}
	}
}

func TestHandlerLimitsEachCaller(t *testing.T) {
	h := newTestHost(t)
	var calls atomic.Int32
	var callers sync.Map
	h.cfg.Allow = func(caller string) bool {
		callers.Store(caller, true)
		return calls.Add(1) <= 2
	}
	ts := httptest.NewServer(NewHandler(h.cfg))
	t.Cleanup(ts.Close)
	s := connect(t, ts.URL)
	args := map[string]any{"agent_id": h.echo, "text": "hi"}
	for i := range 3 {
		code := errorCode(t, s.call(t, args, ""))
		if want := map[bool]agent.Code{true: "", false: agent.CodeRateLimited}[i < 2]; code != want {
			t.Errorf("turn %d: code %q, want %q", i, code, want)
		}
	}
	if _, ok := callers.Load("addr:127.0.0.1"); !ok {
		t.Error("the limit was not keyed by the caller")
	}
}

func TestHandlerWithoutAnswerer(t *testing.T) {
	h := newTestHost(t)
	h.cfg.Answerer = nil
	ts := httptest.NewServer(NewHandler(h.cfg))
	t.Cleanup(ts.Close)
	s := connect(t, ts.URL)
	if code := errorCode(t, s.call(t, map[string]any{"agent_id": h.echo, "text": "hi"}, "")); code != agent.CodeAgentUnavailable {
		t.Errorf("code %q, want agent_unavailable", code)
	}
}
