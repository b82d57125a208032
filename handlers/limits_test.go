package handlers_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/connlimit"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// TestSlowBodyIsCut sends a body at a trickle: the server must answer 408
// and close the connection once the body deadline passes, instead of
// holding the connection for as long as the client likes.
func TestSlowBodyIsCut(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.BodyTimeout = 300 * time.Millisecond })
	for _, path := range []string{"/api/v1/agents", "/mcp", "/login"} {
		ctype := "application/json"
		if path == "/login" {
			ctype = "application/x-www-form-urlencoded"
		}
		conn, err := net.Dial("tcp", e.TS.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nOrigin: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: 60000\r\n\r\n{", path, e.TS.Listener.Addr(), e.TS.URL, OperatorToken, ctype)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		start := time.Now()
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a slow body: %v", path, err)
		}
		resp.Body.Close()
		if path != "/mcp" && resp.StatusCode != http.StatusRequestTimeout {
			t.Errorf("%s: status %d, want 408", path, resp.StatusCode)
		}
		if resp.StatusCode < 400 {
			t.Errorf("%s: status %d for a body that never arrived", path, resp.StatusCode)
		}
		// And the connection is closed, not kept for the rest of the body.
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Errorf("%s: connection still open after the refusal", path)
		}
		t.Logf("%s: %d after %s", path, resp.StatusCode, time.Since(start).Round(time.Millisecond))
	}
}

// TestOverLimitConnectionsAnswered puts the connection-capping listener in
// front of the handler: a client over its cap gets a JSON 429 on the API,
// and health checks are still answered.
func TestOverLimitConnectionsAnswered(t *testing.T) {
	e := New(t)
	ts := httptest.NewUnstartedServer(e.Server.Handler())
	ts.Listener = connlimit.NewListener(ts.Listener, connlimit.Limits{PerClient: 2, Total: 100})
	ts.Config.ConnContext = connlimit.ConnContext
	ts.Start()
	t.Cleanup(ts.Close)
	for range 2 { // hold the client's two connections
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	deadline := time.Now().Add(5 * time.Second)
	var resp *http.Response
	for { // the held connections are accepted asynchronously
		var err error
		resp, err = client.Get(ts.URL + "/api/v1/agents")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusTooManyRequests || time.Now().After(deadline) {
			break
		}
		resp.Body.Close()
		time.Sleep(20 * time.Millisecond)
	}
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %d (Retry-After %q), want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if body := Decode[httpkit.ErrorBody](t, resp); body.Error.Code != "too_many_connections" {
		t.Errorf("code %q", body.Error.Code)
	}
	h, err := client.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	h.Body.Close()
	if h.StatusCode != http.StatusOK {
		t.Errorf("/healthz over the cap: %d, want 200", h.StatusCode)
	}
}

func TestMetricsToken(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.MetricsToken = "metrics-secret-123456" })
	WantStatus(t, e.Do(http.MethodGet, "/metrics", nil), http.StatusUnauthorized)
	WantStatus(t, e.Do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer wrong-token-0000000"), http.StatusUnauthorized)
	WantStatus(t, e.Do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer metrics-secret-123456"), http.StatusOK)
	open := New(t)
	WantStatus(t, open.Do(http.MethodGet, "/metrics", nil), http.StatusOK)
}
