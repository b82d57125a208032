package main

import (
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestPartitionAndHeal cuts a six-node planet in two with the connection
// gaters, registers and updates agents on both sides while they cannot
// hear each other, then heals the cut: catalogue sync on reconnect brings
// both sides to the same catalogue, without anyone treating the other
// side's older versions as an attack.
func TestPartitionAndHeal(t *testing.T) {
	checkNoLeaks(t)
	// A long TTL: no re-announcement may paper over the partition; what
	// crosses after the heal crosses by catalogue sync. 500ms heartbeats keep
	// six nodes' status traffic light under -race.
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: 500 * time.Millisecond}
	n0 := startClusterNode(t, o)
	with := func(boot *clusterNode) nodeOpts { oo := o; oo.bootstrap = []string{boot.addr()}; return oo }
	n1 := startClusterNode(t, with(n0))
	n2 := startClusterNode(t, with(n0))
	n3 := startClusterNode(t, with(n0))
	n4 := startClusterNode(t, with(n3))
	n5 := startClusterNode(t, with(n3))
	left, right := []*clusterNode{n0, n1, n2}, []*clusterNode{n3, n4, n5}
	all := append(append([]*clusterNode(nil), left...), right...)

	// Before the cut everybody knows these. The left side holds more than
	// the strike limit (10) of them, so after the heal the right side
	// serves more than ten outdated versions in one sync.
	var base []apiAgent
	baseOn := map[string]*clusterNode{}
	for _, n := range []*clusterNode{n0, n1, n2, n4, n5} {
		count := 1
		if n == n0 || n == n1 || n == n2 {
			count = 4
		}
		for i := range count {
			a := n.register(fmt.Sprintf("base-%s-%d", strings.ToLower(n.peerID()[len(n.peerID())-5:]), i), "base")
			base = append(base, a)
			baseOn[a.ID] = n
		}
	}
	converge(t, all, "everyone to know the base agents")

	// The cut: each side's gater refuses the other side, and open
	// connections across are closed.
	for _, l := range left {
		for _, r := range right {
			l.m.Node.Gater().Block(r.pid())
			r.m.Node.Gater().Block(l.pid())
		}
	}
	for _, l := range left {
		for _, r := range right {
			_ = l.m.Node.Host().Network().ClosePeer(r.pid())
			_ = r.m.Node.Host().Network().ClosePeer(l.pid())
		}
	}
	waitfor.Until(t, 10*time.Second, "no connection across the cut", func() bool {
		for _, l := range left {
			for _, r := range right {
				if l.connected(r.pid()) || r.connected(l.pid()) {
					return false
				}
			}
		}
		return true
	})

	// Both sides change the world: new agents, and updates of agents the
	// other side knows in their old version.
	onLeft := []apiAgent{n1.register("left-one"), n2.register("left-two")}
	onRight := []apiAgent{n4.register("right-one"), n5.register("right-two")}
	for _, b := range base {
		code, body := baseOn[b.ID].api("PUT", "/api/v1/agents/"+b.ID, map[string]any{
			"name": b.Name, "display_name": "Changed during the partition", "tags": []string{"base"},
			"backend": map[string]string{"kind": "builtin", "builtin": "echo"},
		})
		if code != http.StatusOK {
			t.Fatalf("update %s: %d %s", b.Name, code, body)
		}
	}
	converge(t, left, "the left side to agree")
	converge(t, right, "the right side to agree")
	for _, side := range []struct {
		nodes  []*clusterNode
		mine   []apiAgent
		theirs []apiAgent
	}{{left, onLeft, onRight}, {right, onRight, onLeft}} {
		for _, n := range side.nodes {
			got := n.agentIDs("all")
			for _, a := range side.mine {
				if _, ok := got[a.ID]; !ok {
					t.Fatalf("%s does not have %s from its own side", n.peerID(), a.Name)
				}
			}
			for _, a := range side.theirs {
				if _, ok := got[a.ID]; ok {
					t.Fatalf("%s has %s from across the partition", n.peerID(), a.Name)
				}
			}
		}
	}

	// Heal: the gaters let the other side in again and every node dials
	// one peer across.
	for _, l := range left {
		for _, r := range right {
			l.m.Node.Gater().Unblock(r.pid())
			r.m.Node.Gater().Unblock(l.pid())
		}
	}
	healed := time.Now()
	for i, l := range left {
		r := right[i]
		if err := l.m.Node.Connect(t.Context(), peer.AddrInfo{ID: r.pid(), Addrs: r.m.Node.Host().Addrs()}); err != nil {
			t.Fatalf("reconnect across the healed cut: %v", err)
		}
	}
	converge(t, all, "both sides to converge after the heal")
	t.Logf("converged %s after the heal", time.Since(healed).Round(time.Millisecond))
	for _, n := range all {
		// The other side's heartbeats flow again: its agents, stale while
		// cut off, are online.
		waitfor.Until(t, 10*time.Second, "every new agent online on every node", func() bool {
			got := n.agentIDs("all")
			for _, a := range append(onLeft, onRight...) {
				if got[a.ID].Status != "online" {
					return false
				}
			}
			return true
		})
		if r := n.rejectedTotal(); r != 0 {
			t.Errorf("%s rejected %v records from honest peers: %v", n.peerID(), r, n.rejectedSeries())
		}
		// The other side's older versions of the updated agents are not
		// offences: a peer that missed an update is behind, not lying.
		if r := n.metric("agentsite_p2p_peers_blocked_total"); r != 0 {
			t.Errorf("%s blocked %v honest peers", n.peerID(), r)
		}
		for _, p := range all {
			if n.m.Node.Gater().Blocked(p.pid()) {
				t.Errorf("%s blocks honest %s", n.peerID(), p.peerID())
			}
		}
	}

	// Gossip crosses again too.
	late := n5.register("after-heal")
	waitfor.Until(t, 10*time.Second, "a post-heal agent to reach the other side", func() bool {
		return n0.hasAll(late.ID) && n2.hasAll(late.ID)
	})
}

// converge waits until every node in nodes lists the same agents at the
// same seqs.
func converge(t *testing.T, nodes []*clusterNode, what string) {
	t.Helper()
	waitfor.Until(t, 20*time.Second, what, func() bool {
		first := nodes[0].catalogue()
		for _, n := range nodes[1:] {
			if !maps.Equal(first, n.catalogue()) {
				return false
			}
		}
		return true
	})
}
