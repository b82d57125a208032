package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// healthBoard is a node's health source in a test: what its probes would
// have found, set by the test.
type healthBoard struct {
	mu sync.Mutex
	m  map[string]agent.Health
}

func (b *healthBoard) set(id, state string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]agent.Health{}
	}
	b.m[id] = agent.Health{State: state, SuccessRate: 1, LatencyMS: 12, CheckedAt: time.Now()}
}

func (b *healthBoard) source() map[string]agent.Health {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[string]agent.Health, len(b.m))
	for id, h := range b.m {
		out[id] = h
	}
	return out
}

// healthOf is n's API's view of an agent's health state.
func (n *clusterNode) healthOf(id string) string {
	n.t.Helper()
	code, body := n.api("GET", "/api/v1/agents/"+id, nil)
	if code != http.StatusOK {
		return fmt.Sprintf("HTTP %d", code)
	}
	var a apiwire.Agent
	if err := json.Unmarshal(body, &a); err != nil {
		n.t.Fatal(err)
	}
	return a.Health.State
}

// Health travels with the host's signed heartbeat: B hosts an agent whose
// health turns failing, and A's API shows it failing within two heartbeat
// intervals. A's own opinion of B's agent (its source claims "healthy",
// as a mirror that probed it would) is never sent nor stored: only a host
// speaks for its agents. A rogue that claims the health of B's agent, or
// sends nonsense, is rejected and counted like a bad record, and changes
// nothing.
func TestHealthTravelsWithHeartbeats(t *testing.T) {
	checkNoLeaks(t)
	const interval = 2 * time.Second // two of them bound how long A may lag
	var aBoard, bBoard healthBoard
	a := startClusterNode(t, nodeOpts{heartbeat: interval, health: aBoard.source})
	b := startClusterNode(t, nodeOpts{heartbeat: interval, health: bBoard.source, bootstrap: []string{a.addr()}})

	flaky := b.register("flaky-bot")
	aBoard.set(flaky.ID, agent.HealthHealthy) // A's mirror opinion: must go nowhere
	bBoard.set(flaky.ID, agent.HealthHealthy)
	for _, n := range []*clusterNode{a, b} {
		eventually(t, 15*time.Second, "the host's report of healthy on "+n.peerID(), func() bool {
			return n.healthOf(flaky.ID) == agent.HealthHealthy
		})
	}

	bBoard.set(flaky.ID, agent.HealthFailing)
	start := time.Now()
	eventually(t, 15*time.Second, "A to show the agent failing", func() bool {
		return a.healthOf(flaky.ID) == agent.HealthFailing
	})
	if lag := time.Since(start); lag > 2*interval {
		t.Errorf("A showed failing %v after B's source did; want within two heartbeat intervals (%v)", lag, 2*interval)
	}
	if got := b.healthOf(flaky.ID); got != agent.HealthFailing {
		t.Errorf("B, the host, shows %s", got)
	}
	// One more heartbeat of A has gone out since: its claim of healthy
	// went nowhere, and nothing either node sent was rejected.
	waitHeartbeats(t, b, 2)
	if got := a.healthOf(flaky.ID); got != agent.HealthFailing {
		t.Errorf("A shows %s: its own source's claim about B's agent was stored", got)
	}
	for _, n := range []*clusterNode{a, b} {
		if got := n.rejectedTotal(); got != 0 {
			t.Errorf("%s rejected %v honest messages", n.peerID(), got)
		}
	}

	real := []*clusterNode{a, b}
	for _, tc := range []struct {
		name, reason string
		entry        func(r *rogue) agent.HostedHealth
	}{
		{"claims the health of B's agent", "key", func(*rogue) agent.HostedHealth {
			return agent.HostedHealth{ID: flaky.ID, Name: flaky.Name, Health: agent.Health{State: agent.HealthHealthy, SuccessRate: 1}}
		}},
		{"reports a success rate of 7 for its own agent", "invalid", func(r *rogue) agent.HostedHealth {
			id, err := agent.DeriveID(r.key.GetPublic(), "rogue-bot")
			if err != nil {
				t.Fatal(err)
			}
			return agent.HostedHealth{ID: id, Name: "rogue-bot", Health: agent.Health{State: agent.HealthHealthy, SuccessRate: 7}}
		}},
	} {
		t.Run("rogue "+tc.name, func(t *testing.T) {
			r := newRogue(t)
			r.connect(real...)
			before := map[*clusterNode]float64{}
			for _, n := range real {
				before[n] = n.metric("agentsite_p2p_records_rejected_total", "path", "heartbeat", "reason", tc.reason)
			}
			r.publish(r.status, mustJSON(t, agent.Heartbeat{
				PeerID: r.id.String(), Version: "rogue", SentAt: time.Now().UTC(), AgentsHosted: 1,
				Health: []agent.HostedHealth{tc.entry(r)},
			}))
			for _, n := range real {
				eventually(t, 10*time.Second, "the rogue's heartbeat rejected as "+tc.reason, func() bool {
					return n.metric("agentsite_p2p_records_rejected_total", "path", "heartbeat", "reason", tc.reason) > before[n]
				})
				eventually(t, 10*time.Second, "the rogue's peer score to fall below the graylist threshold", func() bool {
					s, ok := n.m.Node.PeerScore(r.id)
					return ok && s < -80
				})
				if got := n.healthOf(flaky.ID); got != agent.HealthFailing {
					t.Errorf("%s shows B's agent %s after the rogue's heartbeat", n.peerID(), got)
				}
			}
		})
	}
}

// waitHeartbeats waits until n has received k more heartbeats.
func waitHeartbeats(t *testing.T, n *clusterNode, k float64) {
	t.Helper()
	start := n.metric("agentsite_p2p_heartbeats_received_total")
	eventually(t, 30*time.Second, fmt.Sprintf("%v more heartbeats on %s", k, n.peerID()), func() bool {
		return n.metric("agentsite_p2p_heartbeats_received_total") >= start+k
	})
}
