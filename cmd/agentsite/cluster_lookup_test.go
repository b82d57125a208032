package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// A node that lacks a listing finds it through the DHT (GET by id), and a tag
// search reaches the providers of that tag; both verify before caching.
func TestLookupBeyondTheCache(t *testing.T) {
	// A long TTL: A must not re-announce its records (at half the TTL)
	// while D joins, or D would get them by gossip.
	a := startClusterNode(t, nodeOpts{ttl: time.Hour})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}, ttl: time.Hour})
	x := a.register("weather-bot", "weather")
	y := a.register("tide-bot", "tides")
	registered := time.Now()
	waitfor.Until(t, 15*time.Second, "B to learn both agents", func() bool {
		ids := b.agentIDs("all")
		_, okx := ids[x.ID]
		_, oky := ids[y.ID]
		return okx && oky
	})
	// The DHT put and provide run in the background after publishing; wait
	// until B (a DHT server next to A) holds them before D asks.
	waitfor.Until(t, 15*time.Second, "the DHT to hold A's record", func() bool {
		_, err := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+x.ID)
		return err == nil
	})

	// D joins late, without catalogue sync and after the gossip went by:
	// GossipSub still offers a message to new peers (IHAVE) while it is in
	// the message cache, HistoryLength heartbeats. No event marks the end
	// of that window, so the test waits it out.
	gossipWindow := time.Duration(pubsub.GossipSubHistoryLength+1) * pubsub.GossipSubHeartbeatInterval
	<-time.After(time.Until(registered.Add(gossipWindow)))
	d := startClusterNode(t, nodeOpts{bootstrap: []string{b.addr()}, ttl: time.Hour, extra: []string{"--sync-on-connect=false"}})
	waitfor.Until(t, 10*time.Second, "D to connect", func() bool { return d.m.Node.PeerCount() > 0 })
	if _, ok := d.agentIDs("all")[x.ID]; ok {
		t.Fatal("D has the record before looking it up; the test proves nothing")
	}
	var got apiAgent
	waitfor.Until(t, 15*time.Second, "D to find the agent through the DHT", func() bool {
		code, a := d.agent(x.ID)
		got = a
		return code == http.StatusOK
	})
	if got.Name != "weather-bot" || got.HostPeerID != a.peerID() {
		t.Errorf("looked-up agent = %+v", got)
	}
	if _, ok := d.agentIDs("all")[x.ID]; !ok {
		t.Error("the looked-up record was not cached")
	}

	// The tides agent is not in D's cache; a network tag search brings it.
	if _, ok := d.agentIDs("all")[y.ID]; ok {
		t.Fatal("D already has the tides agent")
	}
	waitfor.Until(t, 20*time.Second, "a network tag search to find the tides agent", func() bool {
		code, body := d.api("POST", "/api/v1/network/search?tag=tides", nil)
		var res networkSearchResult
		_ = json.Unmarshal(body, &res)
		_, ok := d.agentIDs("all")[y.ID]
		return code == http.StatusOK && res.Providers > 0 && ok
	})
}

type networkSearchResult struct {
	Providers int `json:"providers"`
	Records   int `json:"records"`
}
