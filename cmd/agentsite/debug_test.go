package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDebugAddr: --debug-addr serves pprof on loopback, apart from the
// portal, which does not; a non-loopback address is refused.
func TestDebugAddr(t *testing.T) {
	m := startNode(t, t.TempDir(), "--debug-addr", "127.0.0.1:0", "--demo-agents=false")
	defer m.Close()
	resp, err := http.Get(m.DebugURL() + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("pprof: %d %.200s", resp.StatusCode, body)
	}
	resp, err = http.Get(m.HTTPURL() + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("portal /debug/pprof/: %d, want 404", resp.StatusCode)
	}
	for _, bad := range []string{"0.0.0.0:6060", "192.0.2.1:6060", ":6060"} {
		c := NewMain().Config
		if err := c.Parse([]string{"--debug-addr", bad}, func(string) string { return "" }, io.Discard); err == nil {
			t.Errorf("--debug-addr %s accepted", bad)
		}
	}
	c := NewMain().Config
	if err := c.Parse(nil, func(k string) string {
		if k == "AGENTSITE_DEBUG_ADDR" {
			return "localhost:6061"
		}
		return ""
	}, io.Discard); err != nil || c.DebugAddr != "localhost:6061" {
		t.Errorf("env twin: %q, %v", c.DebugAddr, err)
	}
}
