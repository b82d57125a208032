package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
)

// TestIdleSyncTransfersNothingHeld: between whole nodes, once their first
// syncs are done, the periodic sync rounds that follow a registration
// (which gossip brought everywhere first) look at the change in each
// peer's feed but transfer no envelope a node already holds: the pages
// come as digests, and a digest held is not asked for. Before digest
// pages each node pulled the new listing again from every peer whose feed
// numbered it. (A want already on its way when the registration's gossip
// arrived brings the listing once more; that is counted as raced, not as
// an envelope asked for though held.)
func TestIdleSyncTransfersNothingHeld(t *testing.T) {
	const size = 3
	opts := func(boot ...string) nodeOpts {
		return nodeOpts{bootstrap: boot, demo: true, ttl: time.Hour, extra: []string{"--sync-interval", "300ms"}}
	}
	nodes := []*clusterNode{startClusterNode(t, opts())}
	for i := 1; i < size; i++ {
		nodes = append(nodes, startClusterNode(t, opts(nodes[0].addr())))
	}
	why := ""
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("last state:", why)
		}
	})
	// settled: every node hears the others, holds id (when set) and has
	// no first sync or quota retry pending.
	settled := func(id string) func() bool {
		return func() bool {
			for i, n := range nodes {
				c, err := n.m.Store.CountNodes(t.Context())
				if err != nil || c[store.StatusOnline] < size-1 {
					why = fmt.Sprintf("node %d hears %v (%v)", i, c, err)
					return false
				}
				if id != "" {
					if _, err := n.m.Store.GetAgent(t.Context(), id); err != nil {
						why = fmt.Sprintf("node %d lacks %s: %v", i, id, err)
						return false
					}
				}
				if p := n.m.Node.SyncRetriesPending(); p > 0 {
					why = fmt.Sprintf("node %d has %d syncs pending", i, p)
					return false
				}
			}
			return true
		}
	}
	waitfor.Until(t, time.Minute, "every node to hear every other, no sync pending", settled(""))

	a := nodes[0].register("late-bot")
	waitfor.Until(t, 30*time.Second, "the new listing everywhere", settled(a.ID))
	before := syncTotals(nodes)
	// Every node asks each of its 2 peers every 300 ms ±25 %: 6 heads a
	// node take it past every peer's feed at least once.
	waitfor.Until(t, time.Minute, "six periodic syncs a node", func() bool {
		for i, n := range nodes {
			if n.m.Node.SyncCounts().Requests["head/periodic"]-before[i].Requests["head/periodic"] < 6 {
				return false
			}
		}
		return true
	})
	after := syncTotals(nodes)
	for i := range nodes {
		for k, v := range after[i].Records {
			if strings.HasPrefix(k, "known/") && v != before[i].Records[k] {
				t.Errorf("node %d: sync transferred %d envelopes it held (%s)", i, v-before[i].Records[k], k)
			}
		}
	}
}

func syncTotals(nodes []*clusterNode) []p2p.SyncCounts {
	out := make([]p2p.SyncCounts, len(nodes))
	for i, n := range nodes {
		out[i] = n.m.Node.SyncCounts()
	}
	return out
}
