package handlers

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initSession sends initialize straight to h as a client at remoteAddr
// and returns the response.
func initSession(h http.Handler, remoteAddr string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(initBody))
	r.RemoteAddr = remoteAddr
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestMCPSessionCapBoundsMemory: anonymous initialize calls cannot make
// the node hold more than the cap of sessions, in the table or in mcp-go
// (about 10 KB each there; 22,003 of them held 262 MB before the fix).
func TestMCPSessionCapBoundsMemory(t *testing.T) {
	env, _ := newMCPTestServer(t)
	const limit = 200
	env.s.mcpLimits = mcpLimits{maxSessions: limit, initsPerMinute: 1 << 30}
	g := env.s.MCPHandler().(*mcpGuard)
	var first, last string
	create := func(n int) {
		t.Helper()
		for i := range n {
			w := initSession(g, "192.0.2.1:1234")
			if w.Code != http.StatusOK {
				t.Fatalf("initialize %d: %d %s", i, w.Code, w.Body)
			}
			last = w.Header().Get("Mcp-Session-Id")
			if first == "" {
				first = last
			}
		}
	}
	create(limit + 100)
	if n := g.front.sessions.count(); n != limit {
		t.Fatalf("%d sessions held after %d initialize calls, want the cap %d", n, limit+100, limit)
	}
	if _, err := g.front.sessions.Validate(first); err == nil {
		t.Error("the oldest session survived")
	}
	if term, err := g.front.sessions.Validate(last); term || err != nil {
		t.Errorf("the newest session was evicted: %v %v", term, err)
	}

	before := liveHeap()
	create(10 * limit)
	after := liveHeap()
	if n := g.front.sessions.count(); n != limit {
		t.Errorf("%d sessions held, want %d", n, limit)
	}
	// 2,000 sessions held in mcp-go would be about 20 MB; the bound is
	// generous for a noisy test process.
	const bound = 6 << 20
	t.Logf("heap %d KB before, %d KB after %d more sessions", before>>10, after>>10, 10*limit)
	if after > before && after-before > bound {
		t.Errorf("heap grew by %d KB over %d evicted sessions (bound %d KB): their state is not released", (after-before)>>10, 10*limit, bound>>10)
	}
	runtime.KeepAlive(g)
}

// TestMCPSessionRateLimit: one address (IPv6: one /64) may start only so
// many sessions a minute; the refusal is a JSON-RPC error with 429 and
// Retry-After. Others are not affected.
func TestMCPSessionRateLimit(t *testing.T) {
	env, _ := newMCPTestServer(t)
	env.s.mcpLimits = mcpLimits{maxSessions: 100, initsPerMinute: 3}
	h := env.s.MCPHandler()
	for i, addr := range []string{"[2001:db8:1:2::1]:1000", "[2001:db8:1:2::2]:1000", "[2001:db8:1:2:ffff::9]:1000"} {
		if w := initSession(h, addr); w.Code != http.StatusOK {
			t.Fatalf("initialize %d from the /64: %d %s", i, w.Code, w.Body)
		}
	}
	w := initSession(h, "[2001:db8:1:2:abcd::1]:1000") // a fourth address, same /64
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("fourth initialize from one /64: %d (Retry-After %q), want 429 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	if body := w.Body.String(); !strings.Contains(body, `"jsonrpc":"2.0"`) || !strings.Contains(body, `"id":1`) || !strings.Contains(body, "Too many new MCP sessions") {
		t.Errorf("429 body = %s", body)
	}
	for _, addr := range []string{"[2001:db8:1:3::1]:1000", "192.0.2.7:1000"} {
		if w := initSession(h, addr); w.Code != http.StatusOK {
			t.Errorf("initialize from another client %s: %d", addr, w.Code)
		}
	}
}

// TestMCPPublicURL: behind a reverse proxy on the same host that keeps
// Host, /mcp answers the public name once --public-url names it, and a
// rebound name (DNS rebinding to loopback) stays refused either way.
func TestMCPPublicURL(t *testing.T) {
	env, _ := newMCPTestServer(t)
	endpoint := env.ts.URL + "/mcp"
	loopback := strings.TrimPrefix(env.ts.URL, "http://")
	cases := []struct {
		publicURL string
		host      string
		origin    string
		want      int
	}{
		{"", loopback, "", http.StatusOK},
		{"", "localhost", "", http.StatusOK},
		{"", "agents.example.org", "", http.StatusForbidden},
		{"", "evil.example", "", http.StatusForbidden},
		{"https://agents.example.org", "agents.example.org", "", http.StatusOK},
		{"https://agents.example.org", "AGENTS.example.org:443", "", http.StatusOK},
		{"https://agents.example.org", "agents.example.org", "https://agents.example.org", http.StatusOK},
		{"https://agents.example.org", loopback, "", http.StatusOK},
		// A proxy that rewrites Host: the public origin is still ours.
		{"https://agents.example.org", loopback, "https://agents.example.org", http.StatusOK},
		{"https://agents.example.org", "evil.example", "", http.StatusForbidden},
		{"https://agents.example.org", "agents.example.org.evil.example", "", http.StatusForbidden},
		{"https://agents.example.org", "agents.example.org", "https://evil.example", http.StatusForbidden},
		// As an operator may write it; browsers send the origin in lower
		// case and without the default port.
		{"https://Agents.Example.org:443/", "agents.example.org", "", http.StatusOK},
		{"https://Agents.Example.org:443/", loopback, "https://agents.example.org", http.StatusOK},
	}
	for _, tc := range cases {
		env.s.Config.PublicURL = tc.publicURL
		env.ts.Config.Handler = env.s.Handler()
		headers := []string{"Host", tc.host}
		if tc.origin != "" {
			headers = append(headers, "Origin", tc.origin)
		}
		resp := mcpRequest(t, "POST", endpoint, strings.NewReader(initBody), int64(len(initBody)), headers...)
		if resp.StatusCode != tc.want {
			t.Errorf("public URL %q, Host %q, Origin %q: status %d, want %d", tc.publicURL, tc.host, tc.origin, resp.StatusCode, tc.want)
		}
		if resp.StatusCode == http.StatusForbidden && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("Host %q: the 403 is %q, want JSON", tc.host, resp.Header.Get("Content-Type"))
		}
		// Pages and the API answer the public name too.
		if tc.host == "agents.example.org" && tc.origin == "" {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", env.ts.URL+"/api/v1/node", nil)
			req.Host = tc.host
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			r.Body.Close()
			if r.StatusCode != http.StatusOK {
				t.Errorf("GET /api/v1/node with Host %s: %d", tc.host, r.StatusCode)
			}
		}
	}
}

// TestMCPUnknownResource: reading agent://<an id nobody has> is the
// protocol's resource-not-found error (-32002; -32602 from 2026-07-28 on,
// SEP-2164), not an internal error.
func TestMCPUnknownResource(t *testing.T) {
	env, echo := newMCPTestServer(t)
	want := map[string]int64{"2025-11-25": -32002, "": jsonrpc.CodeInvalidParams}
	for era, code := range want {
		cs, _ := connectMCP(t, env.ts.URL+"/mcp", era)
		for _, uri := range []string{"agent://" + strings.Repeat("a", len(echo.ID)), "agent://../x", "nothing://here"} {
			_, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
			var e *jsonrpc.Error
			if !errors.As(err, &e) || e.Code != code {
				t.Errorf("protocol %q: read %s: %v, want code %d", era, uri, err, code)
			}
		}
		if _, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "agent://" + echo.ID}); err != nil {
			t.Errorf("protocol %q: read an existing agent: %v", era, err)
		}
	}
}

// TestMCPToolAnnotations: every tool has a title; the catalogue tools say
// they only read (so hosts may call them without asking), the messaging
// tools that they do not.
func TestMCPToolAnnotations(t *testing.T) {
	env, _ := newMCPTestServer(t)
	cs, _ := connectMCP(t, env.ts.URL+"/mcp", "")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	readOnly := map[string]bool{"search_agents": true, "get_agent": true, "list_tags": true, "send_message": false, "agent_echo-bot": false}
	for _, tool := range res.Tools {
		ro, ok := readOnly[tool.Name]
		if !ok {
			continue
		}
		delete(readOnly, tool.Name)
		a := tool.Annotations
		if tool.Title == "" || a == nil || a.Title == "" {
			t.Errorf("%s has no title: %q %+v", tool.Name, tool.Title, a)
			continue
		}
		if a.ReadOnlyHint != ro || a.DestructiveHint == nil || *a.DestructiveHint || a.IdempotentHint != ro || a.OpenWorldHint == nil {
			t.Errorf("%s annotations = %+v, want readOnly=%v idempotent=%v destructive=false openWorld set", tool.Name, a, ro, ro)
		}
	}
	if len(readOnly) != 0 {
		t.Errorf("tools missing: %v", readOnly)
	}
}
