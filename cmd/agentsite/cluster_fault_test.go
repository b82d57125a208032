package main

import (
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestNodeLossAndReturn stops the node that hosts some agents: the others
// show its agents stale (missed heartbeats), then offline (past expires_at),
// and lose nothing else. Restarted on the same data dir, it comes back with
// the same peer ID and agent ids, and its agents are online again everywhere.
func TestNodeLossAndReturn(t *testing.T) {
	checkNoLeaks(t)
	// 100ms heartbeats: stale after ~300ms of silence, well before the
	// records can expire (TTL 8s, re-signed every 2s when 4s or less
	// remain, so at least 2s are left when B stops).
	o := nodeOpts{heartbeat: 100 * time.Millisecond, ttl: 8 * time.Second}
	a := startClusterNode(t, o)
	ob := o
	ob.bootstrap = []string{a.addr()}
	b := startClusterNode(t, ob)
	oc := o
	oc.bootstrap = []string{a.addr(), b.addr()} // A and C stay connected without B
	c := startClusterNode(t, oc)

	onA := a.register("alpha-bot")
	onB1 := b.register("bravo-one")
	onB2 := b.register("bravo-two")
	onC := c.register("charlie-bot")
	all := []string{onA.ID, onB1.ID, onB2.ID, onC.ID}
	bIDs := []string{onB1.ID, onB2.ID}
	status := func(n *clusterNode, id string) string { return n.agentIDs("all")[id].Status }
	for _, n := range []*clusterNode{a, b, c} {
		waitfor.Until(t, 15*time.Second, "every node to see every agent online", func() bool {
			got := n.agentIDs("all")
			for _, id := range all {
				if got[id].Status != "online" {
					return false
				}
			}
			return true
		})
	}
	bPeer, bDir := b.peerID(), b.dir

	b.stop()
	stopped := time.Now()
	seqAtStop := map[string]uint64{}
	for id, l := range a.agentIDs("all") {
		seqAtStop[id] = l.Seq
	}
	for _, n := range []*clusterNode{a, c} {
		for _, id := range bIDs {
			waitfor.Until(t, 5*time.Second, "B's agent to turn stale", func() bool {
				s := status(n, id)
				if s == "offline" {
					t.Fatalf("B's agent %s went offline without being seen stale", id)
				}
				return s == "stale"
			})
		}
	}
	t.Logf("stale after %s", time.Since(stopped).Round(time.Millisecond))
	for _, n := range []*clusterNode{a, c} {
		for _, id := range bIDs {
			waitfor.Until(t, 15*time.Second, "B's agent to turn offline past its expiry", func() bool {
				return status(n, id) == "offline"
			})
		}
	}
	t.Logf("offline after %s", time.Since(stopped).Round(time.Millisecond))
	// Nothing else was lost: the survivors' agents are online on both, and
	// B's are kept (hidden from the default listing, not forgotten).
	for _, n := range []*clusterNode{a, c} {
		got := n.agentIDs("all")
		for _, id := range []string{onA.ID, onC.ID} {
			if got[id].Status != "online" {
				t.Errorf("survivor agent %s is %q", id, got[id].Status)
			}
		}
		for _, id := range bIDs {
			if _, ok := got[id]; !ok {
				t.Errorf("B's agent %s was forgotten", id)
			}
			if _, ok := n.agentIDs("")[id]; ok {
				t.Errorf("offline agent %s is in the default listing", id)
			}
		}
	}

	// B comes back on the same data dir (same key, same database).
	syncBefore, gossipBefore := a.metric("agentsite_p2p_records_accepted_total", "path", "sync"), a.metric("agentsite_p2p_records_accepted_total", "path", "gossip")
	back := startClusterNode(t, nodeOpts{heartbeat: o.heartbeat, ttl: o.ttl, dir: bDir, bootstrap: []string{a.addr()}})
	restarted := time.Now()
	if back.peerID() != bPeer {
		t.Fatalf("peer ID changed across restart: %s → %s", bPeer, back.peerID())
	}
	for _, n := range []*clusterNode{a, c, back} {
		waitfor.Until(t, 10*time.Second, "B's agents to be online again", func() bool {
			got := n.agentIDs("")
			for _, id := range all {
				if got[id].Status != "online" {
					return false
				}
			}
			return true
		})
	}
	t.Logf("online again %s after the restart (A accepted %v by sync, %v by gossip)", time.Since(restarted).Round(time.Millisecond),
		a.metric("agentsite_p2p_records_accepted_total", "path", "sync")-syncBefore, a.metric("agentsite_p2p_records_accepted_total", "path", "gossip")-gossipBefore)
	for _, id := range bIDs {
		_, got := back.agent(id)
		if !got.Local || got.HostPeerID != bPeer {
			t.Errorf("after restart B's view of %s = %+v", id, got)
		}
		_, onAView := a.agent(id)
		if onAView.Seq <= seqAtStop[id] || onAView.HostPeerID != bPeer {
			t.Errorf("A's view of %s after restart = %+v; want a fresh seq from %s", id, onAView, bPeer)
		}
	}
	if n := len(back.agentIDs("all")); n != len(all) {
		t.Errorf("B lists %d agents after restart, want %d (no duplicates)", n, len(all))
	}
}
