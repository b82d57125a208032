package runtime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// probe runs one probe of b on a test runtime and checks that the
// owner's message shows neither the key nor the URL's path (webhook URLs
// carry secrets there), and the error's text (for logs) not the key.
func probe(t *testing.T, b agent.Backend, opts RuntimeOptions) ProbeResult {
	t.Helper()
	res := newTestRuntime(t, b, opts).Probe(t.Context(), b)
	if res.OK != (res.Err == nil) || res.OK != (res.Message() == "") {
		t.Fatalf("inconsistent result %+v (message %q)", res, res.Message())
	}
	if res.Err != nil {
		if strings.Contains(res.Err.Error(), testKey) {
			t.Errorf("the probe's error shows the key: %v", res.Err)
		}
		for _, secret := range []string{testKey, "s3cret-path"} {
			if strings.Contains(res.Message(), secret) {
				t.Errorf("the probe's message shows %q: %q", secret, res.Message())
			}
		}
	}
	return res
}

// statusServer answers every request with status, recording the methods,
// paths and Authorization headers it saw.
type statusServer struct {
	URL    string
	mu     sync.Mutex
	status int
	seen   []string // "METHOD path auth"
}

func newStatusServer(t *testing.T, status int) *statusServer {
	t.Helper()
	s := &statusServer{status: status}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		code := s.status
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"you sent %s"}}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *statusServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func TestProbeLLM(t *testing.T) {
	llm := httptest.NewServer(&fakellm.Server{Model: "m1"})
	t.Cleanup(llm.Close)
	for _, base := range []string{llm.URL + "/v1", llm.URL + "/v1/", llm.URL + "/v1/chat/completions"} {
		if res := probe(t, agent.Backend{Kind: agent.BackendLLM, URL: base, Model: "m1", APIKey: testKey}, RuntimeOptions{}); !res.OK {
			t.Errorf("probe of %s: %v", base, res.Err)
		}
	}

	s := newStatusServer(t, http.StatusOK)
	probe(t, agent.Backend{Kind: agent.BackendLLM, URL: s.URL + "/v1?api-version=1", Model: "m1", APIKey: testKey}, RuntimeOptions{})
	if got := s.requests(); len(got) != 1 || got[0] != "GET /v1/models Bearer "+testKey {
		t.Fatalf("requests %q, want one GET /v1/models with the key", got)
	}
}

// TestProbeMessages: a failed probe tells the owner, in words they can
// act on and without the key, what to fix.
func TestProbeMessages(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there any more: connection refused

	tests := []struct {
		name   string
		kind   string
		status int // of a statusServer; 0: the dead address
		want   string
	}{
		{"llm 401", agent.BackendLLM, http.StatusUnauthorized, "401 from the model endpoint: check the key"},
		{"llm 403", agent.BackendLLM, http.StatusForbidden, "403 from the model endpoint: check the key"},
		{"llm 404", agent.BackendLLM, http.StatusNotFound, "404 from the model endpoint: check the URL"},
		{"llm 500", agent.BackendLLM, http.StatusInternalServerError, "HTTP 500 Internal Server Error from the model endpoint"},
		{"llm 429", agent.BackendLLM, http.StatusTooManyRequests, "rate limited upstream (HTTP 429) from the model endpoint"},
		{"llm refused", agent.BackendLLM, 0, "connection refused at " + deadAddr},
		{"webhook refused", agent.BackendWebhook, 0, "connection refused at " + deadAddr},
		{"webhook 401", agent.BackendWebhook, http.StatusUnauthorized, "401 from the webhook: check the key"},
		{"webhook 404", agent.BackendWebhook, http.StatusNotFound, "404 from the webhook: check the URL"},
		{"webhook 503", agent.BackendWebhook, http.StatusServiceUnavailable, "HTTP 503 Service Unavailable from the webhook"},
		{"a2a 401", agent.BackendA2A, http.StatusUnauthorized, "401 from the agent card URL: the card must be readable without a key"},
		{"a2a refused", agent.BackendA2A, 0, "connection refused at " + deadAddr},
		{"mcp refused", agent.BackendMCP, 0, "connection refused at " + deadAddr},
		{"mcp 401", agent.BackendMCP, http.StatusUnauthorized, "401 from the MCP server: check the key"},
		{"mcp 503", agent.BackendMCP, http.StatusServiceUnavailable, "HTTP 503 Service Unavailable from the MCP server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := "http://" + deadAddr
			if tt.status != 0 {
				base = newStatusServer(t, tt.status).URL
			}
			b := agent.Backend{Kind: tt.kind, URL: base + "/s3cret-path", APIKey: testKey, Model: "m", Tool: "t"}
			if tt.kind == agent.BackendA2A {
				b.APIKey = ""
			}
			res := probe(t, b, RuntimeOptions{})
			if res.OK || res.Message() != tt.want {
				t.Fatalf("probe: %q (%v), want %q", res.Message(), res.Err, tt.want)
			}
		})
	}
}

// TestProbeWebhookSendsOptions: the webhook probe is an OPTIONS request
// (no turn runs), and a server that does not handle OPTIONS is still up.
func TestProbeWebhookSendsOptions(t *testing.T) {
	for _, status := range []int{http.StatusOK, http.StatusNoContent, http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusNotImplemented} {
		s := newStatusServer(t, status)
		res := probe(t, agent.Backend{Kind: agent.BackendWebhook, URL: s.URL + "/hook", APIKey: testKey}, RuntimeOptions{})
		if !res.OK {
			t.Errorf("status %d: %v, want up", status, res.Err)
		}
		if got := s.requests(); len(got) != 1 || got[0] != "OPTIONS /hook Bearer "+testKey {
			t.Errorf("status %d: requests %q, want one OPTIONS /hook with the key", status, got)
		}
	}
}

func TestProbeTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })
	res := probe(t, agent.Backend{Kind: agent.BackendWebhook, URL: srv.URL}, RuntimeOptions{Timeout: 300 * time.Millisecond})
	if res.Message() != "timed out after 300ms" || res.Outcome() != string(agent.CodeAgentTimeout) {
		t.Fatalf("probe: %q (%s), want a timeout after 300ms", res.Message(), res.Outcome())
	}
	if res.Latency < 300*time.Millisecond {
		t.Fatalf("latency %s, want at least the timeout", res.Latency)
	}
}

// TestProbeMCPTool: the MCP probe asks the server for its tools every
// time, so a tool the server stopped offering shows at the next probe,
// whatever the pooled session remembers.
func TestProbeMCPTool(t *testing.T) {
	s := server.NewMCPServer("test", "1.0.0", server.WithToolCapabilities(true))
	noop := func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	}
	s.AddTool(mcp.NewTool("shout", mcp.WithString("text")), noop)
	s.AddTool(mcp.NewTool("whisper", mcp.WithString("text")), noop)
	srv := httptest.NewServer(server.NewStreamableHTTPServer(s))
	t.Cleanup(srv.Close)

	b := agent.Backend{Kind: agent.BackendMCP, URL: srv.URL + "/mcp", Tool: "shout", APIKey: testKey}
	rt := newTestRuntime(t, b, RuntimeOptions{})
	if res := rt.Probe(t.Context(), b); !res.OK {
		t.Fatalf("probe: %v", res.Err)
	}
	// A turn caches the tool list; the probe must not trust it.
	if _, err := rt.Answer(t.Context(), agent.Turn{AgentID: "a1", Text: "hi"}, nil); err != nil {
		t.Fatalf("turn: %v", err)
	}
	s.DeleteTools("shout")
	res := rt.Probe(t.Context(), b)
	if want := `the MCP server no longer offers tool "shout"`; res.OK || res.Message() != want {
		t.Fatalf("probe after the tool went: %q (%v), want %q", res.Message(), res.Err, want)
	}
	if !errors.Is(res.Err, agent.ErrBackendRejected) {
		t.Fatalf("probe error %v, want ErrBackendRejected", res.Err)
	}
}

func TestProbeA2ACard(t *testing.T) {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mux.HandleFunc("GET /card.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"name":"Echo","url":%q,"preferredTransport":"JSONRPC","version":"1","protocolVersion":"0.3.0"}`, srv.URL+"/rpc")
	})
	if res := probe(t, agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/card.json"}, RuntimeOptions{}); !res.OK {
		t.Fatalf("probe: %v", res.Err)
	}
	res := probe(t, agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/gone.json"}, RuntimeOptions{})
	if want := "404 from the agent card URL: check the URL"; res.Message() != want {
		t.Fatalf("probe: %q, want %q", res.Message(), want)
	}
}

func TestProbeBuiltinAndCanceled(t *testing.T) {
	b := agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}
	if res := probe(t, b, RuntimeOptions{}); !res.OK || res.Outcome() != "ok" {
		t.Fatalf("builtin probe: %+v", res)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s := newStatusServer(t, http.StatusOK)
	res := newTestRuntime(t, b, RuntimeOptions{}).Probe(ctx, agent.Backend{Kind: agent.BackendWebhook, URL: s.URL})
	if res.OK || res.Outcome() != string(agent.CodeCanceled) {
		t.Fatalf("canceled probe: %+v (%s), want canceled", res, res.Outcome())
	}
}

func TestHostPort(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.org/v1?key=s3cret": "api.example.org:443",
		"http://user:pw@example.org/hook":       "example.org:80",
		"http://[::1]:8080/x":                   "[::1]:8080",
		"::not a url":                           "the backend",
	} {
		if got := hostPort(in); got != want {
			t.Errorf("hostPort(%q) = %q, want %q", in, got, want)
		}
	}
}
