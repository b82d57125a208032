//go:build agentsite_testnet

package p2p

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/p2p/protocol/ping"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestPlanetOverSlowLinks is the small planet bench (make bench-planet):
// four nodes whose every connection has a 50 ms round trip (linkdelay.go).
// A round trip is no shorter than the link's; a record published on one
// node reaches every other by gossip; and one whose gossip a node never
// gets (WithholdGossip) reaches it through the periodic sync
// (SyncInterval, shortened here). Run with
// go test -tags agentsite_testnet -run TestPlanetOverSlowLinks ./p2p.
func TestPlanetOverSlowLinks(t *testing.T) {
	const rtt = 50 * time.Millisecond
	hostKey, _ := genKey(t)
	caches := make([]*memCache, 4)
	nodes := make([]*Node, 4)
	for i := range nodes {
		caches[i] = &memCache{}
		key := hostKey
		if i > 0 {
			key = nil
		}
		nodes[i] = startNode(t, key, Config{Cache: caches[i], LinkDelay: rtt, SyncInterval: 500 * time.Millisecond, HeartbeatInterval: time.Second})
	}
	for i := 1; i < len(nodes); i++ {
		connect(t, nodes[i], nodes[i-1]) // a chain: records cross up to three slow links
	}
	for _, n := range nodes[1:] {
		res := <-ping.Ping(t.Context(), nodes[0].Host(), n.Host().ID())
		if res.Error != nil {
			t.Fatal(res.Error)
		}
		if res.RTT < rtt {
			t.Fatalf("a ping took %s over a link of %s", res.RTT, rtt)
		}
	}
	// Every node in the mesh of the records topic before the publish.
	waitfor.Until(t, 30*time.Second, "the records topic's mesh", func() bool {
		for _, n := range nodes {
			if len(n.ps.ListPeers(TopicRecords)) == 0 {
				return false
			}
		}
		return true
	})

	r, env := sealRecord(t, hostKey, "far-bot", 1, time.Now().UTC(), time.Hour, "")
	if _, err := caches[0].Put(context.Background(), r, env); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].Announce(context.Background(), r, env); err != nil {
		t.Fatal(err)
	}
	for _, c := range caches {
		waitfor.Until(t, 30*time.Second, "the record on every node", func() bool { return c.has(r.ID) })
	}

	// The last node loses all gossip of records: the next one arrives by
	// sync, through a peer that got it by gossip.
	last := nodes[len(nodes)-1]
	last.WithholdGossip(func(string) bool { return true })
	bySync := func() float64 { return counterValue(last.metrics.accepted.WithLabelValues(pathSync)) }
	before := bySync()
	r2, env2 := sealRecord(t, hostKey, "lost-bot", 1, time.Now().UTC(), time.Hour, "")
	if _, err := caches[0].Put(context.Background(), r2, env2); err != nil {
		t.Fatal(err)
	}
	if err := nodes[0].Announce(context.Background(), r2, env2); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 60*time.Second, "the withheld record to be repaired by sync", func() bool {
		return caches[len(caches)-1].has(r2.ID)
	})
	if got := bySync(); got <= before {
		t.Fatalf("the withheld record arrived, but not by sync (%v records by sync before, %v after)", before, got)
	}
}

func (c *memCache) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}
