package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/mcpkit/mcppool"
)

// mcpTestServer is an mcp-go Streamable HTTP server with a few tools; it
// counts handshakes and remembers request headers.
type mcpTestServer struct {
	url        string
	handshakes atomic.Int64
	forget     atomic.Bool // answer the next tools/call 404
	// slowEnds hears how each call of "slow" ended: true when the caller
	// went away, false when it gave up waiting for that (10 s).
	slowEnds chan bool
	mu       sync.Mutex
	auth     []string
}

func newMCPTestServer(t *testing.T) *mcpTestServer {
	t.Helper()
	s := server.NewMCPServer("test", "1.0.0", server.WithToolCapabilities(false))
	ts := &mcpTestServer{slowEnds: make(chan bool, 16)}
	s.AddTool(mcp.NewTool("shout", mcp.WithDescription("Uppercases text"), mcp.WithString("text", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := req.RequireString("text")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(strings.ToUpper(text)), nil
		})
	s.AddTool(mcp.NewTool("refuse", mcp.WithString("text")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("no shouting on Sundays"), nil
		})
	s.AddTool(mcp.NewTool("search", mcp.WithString("query", mcp.Required()), mcp.WithArray("history")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			h, _ := req.GetArguments()["history"].([]any)
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("results for " + req.GetString("query", "?")),
				mcp.NewTextContent(fmt.Sprintf("%d earlier messages", len(h))),
			}}, nil
		})
	s.AddTool(mcp.NewTool("huge", mcp.WithString("text")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("a", 4096)), nil
		})
	s.AddTool(mcp.NewTool("slow", mcp.WithString("text")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			cut := false
			select {
			case <-ctx.Done():
				cut = true
			case <-time.After(10 * time.Second):
			}
			select {
			case ts.slowEnds <- cut:
			default:
			}
			return mcp.NewToolResultText("late"), nil
		})
	h := server.NewStreamableHTTPServer(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"method":"initialize"`)) || bytes.Contains(body, []byte(`"method":"server/discover"`)) {
			ts.handshakes.Add(1)
		}
		if bytes.Contains(body, []byte(`"method":"tools/call"`)) && ts.forget.CompareAndSwap(true, false) {
			http.NotFound(w, r) // as a restarted server answers an old session
			return
		}
		ts.mu.Lock()
		ts.auth = append(ts.auth, r.Header.Get("Authorization"))
		ts.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ts.url = srv.URL + "/mcp"
	return ts
}

func TestMCPToolCall(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "shout", APIKey: testKey}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	for i, text := range []string{"hello there", "again"} {
		var chunks []string
		reply, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: text}, func(s string) error { chunks = append(chunks, s); return nil })
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if want := strings.ToUpper(text); reply != want || strings.Join(chunks, "") != want {
			t.Fatalf("turn %d: reply %q, chunks %q", i, reply, chunks)
		}
	}
	hs := ts.handshakes.Load()
	if hs == 0 || hs > 2 { // server/discover, and initialize if that fell back
		t.Fatalf("%d handshake requests for two turns; the client should be reused", hs)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, a := range ts.auth {
		if a != "Bearer "+testKey {
			t.Fatalf("Authorization %q", a)
		}
	}
}

func TestMCPArgumentNameFromSchema(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "search"}
	reply, chunks, err := answer(t, b, RuntimeOptions{Timeout: 10 * time.Second}, agent.Turn{
		Text:    "cats",
		History: []agent.ChatMessage{{Role: "user", Text: "hi"}, {Role: "agent", Text: "hello"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "results for cats\n2 earlier messages"; reply != want || len(chunks) != 1 {
		t.Fatalf("reply %q, chunks %q", reply, chunks)
	}
}

func TestMCPToolError(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "refuse", APIKey: testKey}
	_, _, err := answer(t, b, RuntimeOptions{Timeout: 10 * time.Second}, agent.Turn{Text: "hi"})
	if !errors.Is(err, agent.ErrBackendRejected) {
		t.Fatalf("got %v, want ErrBackendRejected", err)
	}
	if PublicMessage(err) != "no shouting on Sundays" {
		t.Fatalf("public message %q", PublicMessage(err))
	}
}

func TestMCPUnknownTool(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "whisper"}
	_, _, err := answer(t, b, RuntimeOptions{Timeout: 10 * time.Second}, agent.Turn{Text: "hi"})
	if !errors.Is(err, agent.ErrBackendRejected) || !strings.Contains(err.Error(), "whisper") {
		t.Fatalf("got %v, want ErrBackendRejected naming the tool", err)
	}
}

func TestMCPReplyTooLarge(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "huge"}
	_, _, err := answer(t, b, RuntimeOptions{Timeout: 10 * time.Second, MaxReplyBytes: 1024}, agent.Turn{Text: "hi"})
	if !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("got %v, want ErrReplyTooLarge", err)
	}
}

func TestMCPUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := agent.Backend{Kind: agent.BackendMCP, URL: "http://" + addr + "/mcp", Tool: "shout", APIKey: testKey}
	_, _, err = answer(t, b, RuntimeOptions{Timeout: 10 * time.Second}, agent.Turn{Text: "hi"})
	if !errors.Is(err, agent.ErrBackendUnavailable) {
		t.Fatalf("got %v, want ErrBackendUnavailable", err)
	}
}

func TestMCPServerErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   error
	}{
		{http.StatusServiceUnavailable, agent.ErrBackendUnavailable},
		{http.StatusTooManyRequests, agent.ErrBackendRejected},
		{http.StatusUnauthorized, agent.ErrBackendRejected},
		{http.StatusForbidden, agent.ErrBackendRejected},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				http.Error(w, "go away", tc.status)
			}))
			defer srv.Close()
			b := agent.Backend{Kind: agent.BackendMCP, URL: srv.URL + "/mcp", Tool: "shout"}
			_, _, err := answer(t, b, RuntimeOptions{Timeout: 10 * time.Second}, agent.Turn{Text: "hi"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// TestMCPDialErrorIsClassified: a failed handshake carries its verdict,
// so turns that waited on another turn's dial (without its HTTP state)
// fail the same way it does.
func TestMCPDialErrorIsClassified(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "go away", http.StatusForbidden)
	}))
	defer srv.Close()
	b := agent.Backend{Kind: agent.BackendMCP, URL: srv.URL + "/mcp", Tool: "shout"}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	_, err := rt.mcp.dial(withMCPState(t.Context(), &mcpCallState{}), b)
	if !errors.Is(err, agent.ErrBackendRejected) {
		t.Fatalf("dial: %v, want ErrBackendRejected", err)
	}
	if err := explainMCP(err, &mcpCallState{}); !errors.Is(err, agent.ErrBackendRejected) {
		t.Errorf("a waiter's verdict: %v, want ErrBackendRejected", err)
	}
}

func TestMCPNotAnMCPServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<html>hello</html>")
	}))
	defer srv.Close()
	b := agent.Backend{Kind: agent.BackendMCP, URL: srv.URL, Tool: "shout"}
	_, _, err := answer(t, b, RuntimeOptions{Timeout: 10 * time.Second}, agent.Turn{Text: "hi"})
	if err == nil {
		t.Fatal("an HTML page answered as an MCP server")
	}
	for _, ok := range []error{agent.ErrBackendUnavailable, agent.ErrBadBackendReply, agent.ErrBackendRejected} {
		if errors.Is(err, ok) {
			return
		}
	}
	t.Fatalf("got %v", err)
}

func TestMCPRuntimeClose(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "shout"}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "x"}, nil); err == nil {
		t.Fatal("answered after Close")
	}
}

func TestMCPPoolIdleExpiry(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "shout"}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	rt.mcp.pool = mcppool.New[string, *mcpConn](50 * time.Millisecond)
	if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 5*time.Second, "the idle client to be closed", func() bool { return rt.mcp.pool.Len() == 0 })
	before := ts.handshakes.Load()
	if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "y"}, nil); err != nil {
		t.Fatal(err)
	}
	if ts.handshakes.Load() == before {
		t.Fatal("no new handshake after the idle client was closed")
	}
}

func TestMCPConcurrentTurns(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "shout"}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("turn %d", i)
			reply, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: text}, nil)
			if err != nil || reply != strings.ToUpper(text) {
				t.Errorf("%q: %q, %v", text, reply, err)
			}
		}()
	}
	wg.Wait()
}

// TestMCPConcurrentFirstTurnsShareOneHandshake: turns that find no
// session start one, not one each (the pool dials once per key).
func TestMCPConcurrentFirstTurnsShareOneHandshake(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "shout"}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			<-start
			if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "x"}, nil); err != nil {
				t.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := ts.handshakes.Load(); n != 1 {
		t.Errorf("%d handshakes for 8 concurrent first turns, want 1", n)
	}
}

// TestMCPTimeout: the turn's time limit cuts the call; the server sees its
// caller go away rather than giving up on it after 10 s.
func TestMCPTimeout(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "slow"}
	_, _, err := answer(t, b, RuntimeOptions{Timeout: 300 * time.Millisecond}, agent.Turn{Text: "hi"})
	if !errors.Is(err, agent.ErrBackendTimeout) {
		t.Fatalf("got %v, want ErrBackendTimeout", err)
	}
	select {
	case cut := <-ts.slowEnds:
		if !cut {
			t.Fatal("the call ran until the server gave up on it: the time limit did not cut it")
		}
	case <-time.After(20 * time.Second): // the server gives up after 10 s
		t.Fatal("the server never ended the call")
	}
}

func TestMCPSessionLostIsRetried(t *testing.T) {
	ts := newMCPTestServer(t)
	b := agent.Backend{Kind: agent.BackendMCP, URL: ts.url, Tool: "shout"}
	rt := newTestRuntime(t, b, RuntimeOptions{Timeout: 10 * time.Second})
	if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "one"}, nil); err != nil {
		t.Fatal(err)
	}
	before := ts.handshakes.Load()
	ts.forget.Store(true)
	reply, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "two"}, nil)
	if err != nil || reply != "TWO" {
		t.Fatalf("%q, %v", reply, err)
	}
	if ts.handshakes.Load() == before {
		t.Fatal("the lost session was not replaced")
	}
}
