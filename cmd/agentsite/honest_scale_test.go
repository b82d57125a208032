package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestBigBatchKeepsTheHostHeard: a host registers 3,000 agents through
// the batch API while a peer listens. The host paces the gossip of its own
// records (the rest reaches the peer by sync), so the peer counts no flood
// from it and takes no point off its score; the peer keeps hearing its
// heartbeats, and holds all of its listings (the 3,000 and its 2 demo
// agents) online. Before, every item was gossiped at once: the peer
// counted each record past 120 a minute as a flood, graylisted the host,
// and heard no more heartbeats from it, so its listings turned stale.
func TestBigBatchKeepsTheHostHeard(t *testing.T) {
	if testing.Short() {
		t.Skip("whole nodes and a 3,000-agent batch")
	}
	const agents, batch = 3000, 500
	// A batch answers when all its items are stored: under the race
	// detector on a loaded machine that can take longer than the default
	// write timeout (30 s).
	// The same for the store's deadline (5 s).
	fast := []string{"--sync-interval", "1s", "--write-timeout", "10m", "--store-timeout", "1m"}
	// A 2 s heartbeat: at the tests' 200 ms a host is stale after 600 ms, which a
	// loaded machine under the race detector misses.
	host := startClusterNode(t, nodeOpts{demo: true, ttl: time.Hour, heartbeat: 2 * time.Second, extra: fast})
	peerNode := startClusterNode(t, nodeOpts{bootstrap: []string{host.addr()}, ttl: time.Hour, heartbeat: 2 * time.Second, extra: fast})
	heard := func() float64 { return peerNode.metric("agentsite_p2p_heartbeats_received_total") }
	waitfor.Until(t, 30*time.Second, "the peer hearing the host", func() bool { return heard() > 0 })

	for start := 0; start < agents; start += batch {
		items := make([]map[string]any, 0, batch)
		for i := start; i < start+batch; i++ {
			name := fmt.Sprintf("batch-bot-%04d", i)
			items = append(items, map[string]any{
				"name": name, "display_name": fmt.Sprintf("Batch bot %d", i), "description": "Agent " + name + ".",
				"tags": []string{"batch"}, "backend": map[string]any{"kind": "builtin", "builtin": "echo"},
			})
		}
		began := time.Now()
		code, body := host.api("POST", "/api/v1/agents:batch", map[string]any{"items": items})
		t.Logf("batch of %d from %d: %d after %v", batch, start, code, time.Since(began).Round(time.Millisecond))
		if code != http.StatusOK {
			t.Fatalf("batch from %d: %d %.300s", start, code, body)
		}
		var res struct {
			Created, Refused int
			Results          []struct {
				Error *struct{ Message string }
			}
		}
		if err := json.Unmarshal(body, &res); err != nil {
			t.Fatal(err)
		}
		if res.Created != batch {
			for _, r := range res.Results {
				if r.Error != nil {
					t.Fatalf("batch from %d: created %d of %d; first refusal: %s", start, res.Created, batch, r.Error.Message)
				}
			}
		}
	}
	afterBatch := heard()
	t.Logf("after the batch the peer counted %.0f flood messages from the host and took %.1f points off its score",
		peerNode.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "flood"), peerNode.m.Node.AdmissionPenalty(host.pid()))

	want := agents + 2 // and the host's demo agents
	// count is how many of the host's listings the peer shows with status.
	count := func(status string) int {
		c := 0
		for _, a := range peerNode.agentIDs(status) {
			if a.HostPeerID == host.peerID() {
				c++
			}
		}
		return c
	}
	// The peer takes the records gossip did not bring by sync, verifying
	// each: under the race detector on a loaded machine that is minutes.
	deadline := time.Now().Add(6 * time.Minute)
	for count("online") < want {
		if time.Now().After(deadline) {
			t.Fatalf("the peer shows %d of the host's %d listings online, %d held", count("online"), want, count("all"))
		}
		time.Sleep(time.Second) // polling interval
	}
	waitfor.Until(t, 30*time.Second, "the peer hearing the host's heartbeats after the batch", func() bool {
		return heard() > afterBatch
	})
	if f := peerNode.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "flood"); f != 0 {
		t.Errorf("the peer counted %.0f flood messages during the batch, want none", f)
	}
	if p := peerNode.m.Node.AdmissionPenalty(host.pid()); p >= 1 {
		t.Errorf("the peer took %.1f points off the host's score (graylisted below -80), want none", p)
	}
}
