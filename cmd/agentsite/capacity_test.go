package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestMaxListings: a node started with --max-listings 10, fed by real
// peers (a whole node's agents by sync and gossip, a peer serving 100
// listings of never-heard publishers by sync), never holds more than 10
// listings, keeps its own and the heard node's online ones, refuses
// (without penalising the relaying peer) what does not fit, and evicts
// the never-heard publishers' listings to make room for the heard node's
// new ones.
func TestMaxListings(t *testing.T) {
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: time.Second}
	a := startClusterNode(t, o)
	om := o
	om.bootstrap = []string{a.addr()}
	om.extra = []string{"--max-listings", "10"}
	m := startClusterNode(t, om)
	var own, honest []string
	for i := range 3 {
		own = append(own, m.register(fmt.Sprintf("own-%d", i)).ID)
	}
	for i := range 4 {
		honest = append(honest, a.register(fmt.Sprintf("honest-%d", i)).ID)
	}
	waitfor.Until(t, 30*time.Second, "M to hold A's agents online", func() bool {
		got := m.agentIDs("online")
		for _, id := range honest {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	held := func(what string) map[string]apiAgent {
		t.Helper()
		all := m.agentIDs("all")
		if len(all) > 10 {
			t.Fatalf("%s: M holds %d listings, its --max-listings is 10 (max %v evicted %v refused %v)", what, len(all), m.metric("agentsite_catalogue_max_listings"), m.metric("agentsite_catalogue_evicted_total"), m.metric("agentsite_catalogue_refused_total"))
		}
		for _, id := range append(append([]string{}, own...), honest...) {
			if a, ok := all[id]; !ok || a.Status == "offline" {
				t.Fatalf("%s: M lost %s (%+v)", what, id, a)
			}
		}
		return all
	}

	// A peer serving 100 listings of never-heard publishers by sync: 3
	// fit, the rest are refused, and the peer is not blamed.
	r := newRogue(t)
	r.servePaged(spam(t, 20, 5, "flood"))
	r.connect(m)
	waitfor.Until(t, 60*time.Second, "M to refuse what does not fit", func() bool {
		held("during the flood")
		return m.metric("agentsite_catalogue_refused_total") >= 1 &&
			m.metric("agentsite_p2p_records_rejected_total", "reason", "full") >= 1
	})
	waitfor.Until(t, 30*time.Second, "M to fill up with the flood's listings", func() bool {
		return len(held("after the flood")) == 10
	})
	if pen := m.m.Node.AdmissionPenalty(r.id); pen != 0 {
		t.Errorf("the relaying peer was penalised (%v) for this node's capacity", pen)
	}

	// A's new agents, online, evict the flood's listings, then are
	// refused: 3 of the 5 fit.
	var late []string
	for i := range 5 {
		late = append(late, a.register(fmt.Sprintf("late-%d", i)).ID)
	}
	waitfor.Until(t, 30*time.Second, "M to hold 3 of A's late agents instead of the flood's", func() bool {
		all := held("A's late agents")
		n := 0
		for _, id := range late {
			if _, ok := all[id]; ok {
				n++
			}
		}
		return n == 3 && len(all) == 10
	})
	if got := m.metric("agentsite_catalogue_evicted_total"); got < 3 {
		t.Errorf("evicted %v listings, want at least the flood's 3", got)
	}
	if code, _ := m.agent(own[0]); code != http.StatusOK {
		t.Errorf("M's own agent: %d", code)
	}
}
