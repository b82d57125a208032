package mcpserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// InitBody is a session-era initialize request (exported for the
// package's external tests).
const InitBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// bareGuard is /mcp on no store, chat or Origin rule: enough for
// initialize, which touches none of them.
func bareGuard(lim Limits) *guard {
	s := &Server{
		AdmitOrigin: func(http.ResponseWriter, *http.Request) bool { return true },
		Version:     "test",
		Logger:      slog.New(slog.DiscardHandler),
		Now:         time.Now,
		Limits:      lim,
	}
	return s.Handler().(*guard)
}

// initSession sends initialize straight to h as a client at remoteAddr
// and returns the response.
func initSession(h http.Handler, remoteAddr string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(InitBody))
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
	const limit = 200
	g := bareGuard(Limits{MaxSessions: limit, InitsPerMinute: 1 << 30})
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
	if n := g.sessions.count(); n != limit {
		t.Fatalf("%d sessions held after %d initialize calls, want the cap %d", n, limit+100, limit)
	}
	if _, err := g.sessions.Validate(first); err == nil {
		t.Error("the oldest session survived")
	}
	if term, err := g.sessions.Validate(last); term || err != nil {
		t.Errorf("the newest session was evicted: %v %v", term, err)
	}

	before := liveHeap()
	create(10 * limit)
	after := liveHeap()
	if n := g.sessions.count(); n != limit {
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
	h := bareGuard(Limits{MaxSessions: 100, InitsPerMinute: 3})
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

func TestAgentToolName(t *testing.T) {
	long := strings.Repeat("a", 60) + "-bot" // 64, the longest name
	cases := map[string]string{
		"echo-bot":   "agent_echo-bot",
		"Weird.Name": "agent_weird_name",
		long:         "agent_" + long[:49] + "_",
	}
	for in, want := range cases {
		got := agentToolName(in)
		if !strings.HasPrefix(got, want) || len(got) > maxToolNameLen {
			t.Errorf("agentToolName(%q) = %q (%d chars), want prefix %q", in, got, len(got), want)
		}
	}
	if agentToolName(long) == agentToolName(strings.Repeat("a", 60)+"-cat") {
		t.Error("two long names share a tool name")
	}
}
func TestMCPSessionsExpire(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	m := newSessionTable(time.Minute, 3, func() time.Time { return now })
	a := m.Generate()
	if !strings.HasPrefix(a, sessionPrefix) || len(a) != len(sessionPrefix)+32 {
		t.Fatalf("session id %q", a)
	}
	if term, err := m.Validate(a); term || err != nil {
		t.Fatalf("fresh session: %v %v", term, err)
	}
	if _, err := m.Validate("mcp-unknown"); err == nil {
		t.Error("unknown session accepted")
	}
	now = now.Add(50 * time.Second)
	if term, err := m.Validate(a); term || err != nil {
		t.Fatalf("session in use: %v %v", term, err)
	}
	b := m.Generate()
	now = now.Add(61 * time.Second) // a idle 61 s, b 61 s
	if term, _ := m.Validate(a); !term {
		t.Error("idle session still valid")
	}
	if got := m.release(); len(got) != 2 || m.count() != 0 || !slices.Contains(got, a) || !slices.Contains(got, b) {
		t.Errorf("release = %v, %d left", got, m.count())
	}
	if got := m.release(); len(got) != 0 {
		t.Errorf("released twice: %v", got)
	}
	// At most max sessions: each new one evicts the least recently used.
	ids := []string{m.Generate(), m.Generate(), m.Generate()}
	now = now.Add(time.Second)
	m.Validate(ids[0])
	m.Validate(ids[2])
	d, e := m.Generate(), m.Generate()
	if _, err := m.Validate(ids[1]); err == nil {
		t.Error("the least recently used session survived a full table")
	}
	if _, err := m.Validate(ids[0]); err == nil {
		t.Error("the second least recently used session survived a second new one")
	}
	for _, id := range []string{ids[2], d, e} {
		if term, err := m.Validate(id); term || err != nil {
			t.Errorf("a recently used session was evicted: %v %v", term, err)
		}
	}
	if got := m.release(); m.count() != 3 || !slices.Equal(got, []string{ids[1], ids[0]}) {
		t.Errorf("release = %v, %d held; want the two evicted, 3 held", got, m.count())
	}
	// A session evicted before mcp-go registered it is released again.
	m.registered(ids[1])
	m.registered(d)
	if got := m.release(); !slices.Equal(got, []string{ids[1]}) {
		t.Errorf("release after late registrations = %v", got)
	}
}
