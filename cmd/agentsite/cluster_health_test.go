package main

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestHealthOfARemoteAgent: B hosts a webhook agent and probes it; when
// the webhook goes down, A (a mirror) shows it failing within a few probe
// intervals from B's signed heartbeats, and A never probes it itself.
func TestHealthOfARemoteAgent(t *testing.T) {
	var probes atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			probes.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"reply":"ok"}`))
	}))
	t.Cleanup(hook.Close)
	probe := []string{"--probe-interval", "1s", "--allow-private-endpoints"}
	b := startClusterNode(t, nodeOpts{heartbeat: time.Second, extra: probe})
	a := startClusterNode(t, nodeOpts{heartbeat: time.Second, bootstrap: []string{b.addr()}, extra: probe})
	hooked := b.registerBackend("hooked", map[string]any{"kind": "webhook", "url": hook.URL + "/hook"})

	healthOnA := func() string {
		code, got := a.agent(hooked.ID)
		if code != http.StatusOK {
			return ""
		}
		return got.Health.State
	}
	waitfor.Until(t, 30*time.Second, "A to show B's webhook agent healthy", func() bool { return healthOnA() == agent.HealthHealthy })
	hook.Close() // the webhook goes down: B's probes are refused
	waitfor.Until(t, 30*time.Second, "A to show B's webhook agent failing", func() bool { return healthOnA() == agent.HealthFailing })

	if got := a.metric("agentsite_probe_total", "kind", "webhook"); got != 0 {
		t.Errorf("A probed a webhook %v times; a mirror never probes other nodes' agents", got)
	}
	if probes.Load() == 0 {
		t.Error("the webhook was never probed")
	}
}
