package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
)

func TestConfigProbeInterval(t *testing.T) {
	var c Config
	if err := c.Parse(nil, env(nil), io.Discard); err != nil || c.ProbeInterval != time.Minute {
		t.Fatalf("default --probe-interval = %s (%v), want 1m", c.ProbeInterval, err)
	}
	c = Config{}
	if err := c.Parse(nil, env(map[string]string{"AGENTSITE_PROBE_INTERVAL": "5s"}), io.Discard); err != nil || c.ProbeInterval != 5*time.Second {
		t.Fatalf("AGENTSITE_PROBE_INTERVAL=5s gives %s (%v)", c.ProbeInterval, err)
	}
	for _, bad := range []string{"500ms", "2h"} {
		c = Config{}
		err := c.Parse([]string{"--probe-interval", bad}, env(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--probe-interval must be between 1s and 1h") {
			t.Errorf("--probe-interval %s: %v, want a range error", bad, err)
		}
	}
}

// TestHealthOptionsFitInterval: at a long probe interval the window and
// its recent part still hold a few probes.
func TestHealthOptionsFitInterval(t *testing.T) {
	for _, tt := range []struct {
		interval, window, recent time.Duration
	}{
		{time.Minute, time.Hour, 10 * time.Minute},
		{time.Second, time.Hour, 10 * time.Minute},
		{10 * time.Minute, time.Hour, 30 * time.Minute},
		{time.Hour, 132 * time.Minute, 132 * time.Minute},
	} {
		o := healthOptions(tt.interval)
		if o.Window != tt.window || o.Recent != tt.recent {
			t.Errorf("interval %s: window %s, recent %s; want %s, %s", tt.interval, o.Window, o.Recent, tt.window, tt.recent)
		}
	}
}

// TestProbeNodeHealth: a node probes its own agents every --probe-interval:
// a webhook agent whose backend refuses connections turns failing with
// the reason for its owner, builtins are healthy, and /metrics counts the
// probes by kind and outcome.
func TestProbeNodeHealth(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()

	n := startClusterNode(t, nodeOpts{demo: true, extra: []string{"--probe-interval", "1s", "--allow-private-endpoints"}})
	code, body := n.api("POST", "/api/v1/agents", map[string]any{
		"name": "hook", "display_name": "Hook", "description": "A webhook that is down.", "version": "1.0.0",
		"backend": map[string]string{"kind": "webhook", "url": "http://" + deadAddr + "/hook"},
	})
	if code != http.StatusCreated {
		t.Fatalf("register: %d %s", code, body)
	}
	var created apiAgent
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 30*time.Second, "the webhook agent failing", func() bool {
		return n.m.Health.Summary(created.ID).State == agent.HealthFailing
	})
	if msg := n.m.Health.LastError(created.ID); msg != "connection refused at "+deadAddr {
		t.Fatalf("LastError = %q", msg)
	}
	sums := n.m.Health.Summaries()
	healthy := 0
	for id, s := range sums {
		if id != created.ID && s.State == agent.HealthHealthy {
			healthy++
		}
	}
	if healthy == 0 || healthy != len(sums)-1 {
		t.Fatalf("summaries %+v, want the builtin demo agents healthy", sums)
	}
	if got := n.metric("agentsite_probe_total", "kind", "webhook", "outcome", "agent_unavailable"); got < 3 {
		t.Fatalf("agentsite_probe_total{webhook,agent_unavailable} = %v, want ≥ 3", got)
	}
	if got := n.metric("agentsite_probe_duration_seconds_count", "kind", "webhook"); got < 3 {
		t.Fatalf("agentsite_probe_duration_seconds_count{webhook} = %v, want ≥ 3", got)
	}
}
