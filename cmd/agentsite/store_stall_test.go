package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// TestNodeStoreStallAnswers503AndRecovers runs a whole node on Postgres
// through a proxy, with --store-timeout 300ms: while the database is frozen
// a registration gets 503 + Retry-After within a few deadlines and a page
// the 503 page; after the freeze the same node registers again, no restart.
func TestNodeStoreStallAnswers503AndRecovers(t *testing.T) {
	u := pgtest.NewDatabase(t)
	proxy := pgtest.NewProxy(t, u)
	const token = "stall-operator-token-0123456789"
	m := NewMain()
	m.LogOutput = io.Discard
	err := m.ParseFlags([]string{
		"--data-dir", t.TempDir(),
		"--http-addr", "127.0.0.1:0",
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--database-url", proxy.URL(),
		"--demo-agents=false",
		"--operator-token", token,
	}, env(map[string]string{"AGENTSITE_STORE_TIMEOUT": "300ms"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); err != nil {
		t.Fatalf("run node: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })

	register := func() (*http.Response, time.Duration) {
		t.Helper()
		body := `{"name":"stall-bot","display_name":"Stall Bot","description":"x","tags":["test"],"backend":{"kind":"builtin","builtin":"echo"}}`
		return send(t, http.MethodPost, m.HTTPURL()+"/api/v1/agents", body, "Authorization", "Bearer "+token, "Content-Type", "application/json")
	}
	// The database stays frozen until Restore, so an answer at all (before
	// send's 20 s) is the store deadline's refusal; how fast it comes
	// depends on the machine.
	proxy.Freeze()
	resp, took := register()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("register while frozen: %d, Retry-After %q, after %v; want 503 with Retry-After",
			resp.StatusCode, resp.Header.Get("Retry-After"), took)
	}
	var apiErr struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&apiErr); err != nil || apiErr.Error.Code != "store_unavailable" {
		t.Errorf("error body: %+v (%v), want code store_unavailable", apiErr, err)
	}
	resp, took = send(t, http.MethodGet, m.HTTPURL()+"/", "")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), `data-testid="error-page"`) {
		t.Errorf("home page while frozen: %d %q after %v, want the 503 page: %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), took, body)
	}

	proxy.Restore()
	resp, _ = register()
	if resp.StatusCode != http.StatusCreated {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("register after the freeze: %d, want 201: %s", resp.StatusCode, body)
	}
}

// send makes a request with a client deadline (a hanging node fails the
// test) and reports how long the answer took.
func send(t *testing.T, method, url, body string, headers ...string) (*http.Response, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: no answer: %v", method, url, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, time.Since(start)
}
