package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestTwentyNodesAndALateJoiner starts a planet of twenty nodes (one on
// Postgres), bootstrapped partly as a star and partly as a chain, registers
// and updates agents on several of them and checks that every node learns
// every record by gossip; then a twenty-first node that knows a single peer
// gets the whole catalogue through catalogue sync.
func TestTwentyNodesAndALateJoiner(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 21 nodes")
	}
	checkNoLeaks(t)
	// A long TTL keeps refreshes (re-announcements) out of the picture: what
	// the late joiner has, it got by sync. A slow heartbeat keeps 21 nodes'
	// status traffic light (every heartbeat is two writes on every other
	// node); liveness is not under test here.
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: 5 * time.Second}
	const total = 20
	began := time.Now()
	nodes := make([]*clusterNode, 0, total)
	hub := startClusterNode(t, nodeOpts{ttl: o.ttl, heartbeat: o.heartbeat, postgres: true})
	nodes = append(nodes, hub)
	for i := 1; i < total; i++ {
		oi := o
		if i < total/2 {
			oi.bootstrap = []string{hub.addr()} // star around the hub
		} else {
			oi.bootstrap = []string{nodes[i-1].addr()} // chain off the last spoke
		}
		nodes = append(nodes, startClusterNode(t, oi))
	}

	t.Logf("started %d nodes in %s", total, time.Since(began).Round(time.Millisecond))

	// One agent on each of several nodes, some updated right away (a
	// register-then-edit script), which must neither confuse the seq rule
	// nor get honest forwarders punished when updates overtake each other.
	want := map[string]uint64{}
	idOn := map[int]string{}
	for _, i := range []int{0, 3, 7, 10, 14, 19} {
		a := nodes[i].register(fmt.Sprintf("agent-%02d", i), "scale", fmt.Sprintf("n%d", i))
		want[a.ID] = a.Seq
		idOn[i] = a.ID
	}
	for _, i := range []int{3, 14} {
		id := idOn[i]
		for v := 2; v <= 3; v++ {
			code, body := nodes[i].api("PUT", "/api/v1/agents/"+id, map[string]any{
				"name": fmt.Sprintf("agent-%02d", i), "display_name": fmt.Sprintf("Agent %d v%d", i, v),
				"tags": []string{"scale"}, "backend": map[string]string{"kind": "builtin", "builtin": "echo"},
			})
			if code != http.StatusOK {
				t.Fatalf("update on node %d: %d %s", i, code, body)
			}
			_, a := nodes[i].agent(id)
			want[id] = a.Seq
		}
	}

	start := time.Now()
	for i, n := range nodes {
		waitfor.Until(t, 30*time.Second, fmt.Sprintf("node %d to learn all %d records at their latest seq", i, len(want)), func() bool {
			got := n.catalogue()
			for id, seq := range want {
				if got[id] != seq {
					return false
				}
			}
			return true
		})
		t.Logf("node %d has them all after %s", i, time.Since(start).Round(time.Millisecond))
	}
	t.Logf("20 nodes converged on %d records in %s", len(want), time.Since(start).Round(time.Millisecond))

	// Gossip only carried valid records from honest peers: nothing may have
	// been rejected, nobody blocked.
	for i, n := range nodes {
		if r := n.rejectedTotal(); r != 0 {
			t.Errorf("node %d rejected %v records from honest peers: %v", i, r, n.rejectedSeries())
		}
		if b := n.metric("agentsite_p2p_peers_blocked_total"); b != 0 {
			t.Errorf("node %d blocked %v honest peers", i, b)
		}
	}

	// The late joiner knows only the end of the chain.
	start = time.Now()
	late := startClusterNode(t, nodeOpts{ttl: o.ttl, heartbeat: o.heartbeat, bootstrap: []string{nodes[total-1].addr()}})
	waitfor.Until(t, 10*time.Second, "the late joiner to mirror the catalogue", func() bool {
		got := late.catalogue()
		for id, seq := range want {
			if got[id] != seq {
				return false
			}
		}
		return true
	})
	t.Logf("late joiner mirrored %d records in %s", len(want), time.Since(start).Round(time.Millisecond))
	sc := late.scrape()
	bySync, byGossip := sc.sum("agentsite_p2p_records_accepted_total", "path", "sync"), sc.sum("agentsite_p2p_records_accepted_total", "path", "gossip")
	t.Logf("late joiner accepted %v records by sync, %v by gossip", bySync, byGossip)
	if bySync < float64(len(want)) || byGossip != 0 {
		t.Errorf("late joiner accepted %v records by sync and %v by gossip, want all %d by sync", bySync, byGossip, len(want))
	}
	if r := late.rejectedTotal(); r != 0 {
		t.Errorf("late joiner rejected %v records from honest peers: %v", r, late.rejectedSeries())
	}
}
