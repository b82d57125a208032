package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
)

// ARD federation on a three-node planet (issue 22): D mirrors nothing
// tagged "tides"; its registry answers from the mirror (nothing), and with
// federate: true finds A's agent through the DHT's tag providers, marked
// as such; a URN the mirror lacks is looked up in the DHT by its id.
func TestARDFederatesThroughTheDHT(t *testing.T) {
	a := startClusterNode(t, nodeOpts{ttl: time.Hour})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}, ttl: time.Hour})
	tide := a.register("tide-bot", "tides")
	weather := a.register("weather-bot", "weather")
	registered := time.Now()
	eventually(t, 15*time.Second, "B to learn both agents", func() bool { return b.hasAll(tide.ID, weather.ID) })
	eventually(t, 15*time.Second, "the DHT to hold A's records", func() bool {
		_, err1 := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+tide.ID)
		_, err2 := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+weather.ID)
		return err1 == nil && err2 == nil
	})
	// D joins after the gossip went by, without catalogue sync (as in
	// TestLookupBeyondTheCache).
	<-time.After(time.Until(registered.Add(time.Duration(pubsub.GossipSubHistoryLength+1) * pubsub.GossipSubHeartbeatInterval)))
	d := startClusterNode(t, nodeOpts{bootstrap: []string{b.addr()}, ttl: time.Hour, extra: []string{"--sync-on-connect=false"}})
	eventually(t, 10*time.Second, "D to connect", func() bool { return d.m.Node.PeerCount() > 0 })

	ardSearch := func(body map[string]any) ard.SearchResponse {
		t.Helper()
		code, raw := d.api("POST", "/ard/search", body)
		if code != http.StatusOK {
			t.Fatalf("POST /ard/search %v: %d %s", body, code, raw)
		}
		var out ard.SearchResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("decode: %v: %s", err, raw)
		}
		return out
	}
	tides := map[string]any{"tags": []string{"tides"}}
	if got := ardSearch(map[string]any{"filters": tides}); got.Count != 0 || got.Federation.Federated {
		t.Fatalf("D's mirror already has tides agents: %+v; the test proves nothing", got)
	}

	var fed ard.SearchResponse
	eventually(t, 30*time.Second, "a federated search to find the tides agent", func() bool {
		fed = ardSearch(map[string]any{"filters": tides, "federate": true, "deadline_ms": 10000})
		return fed.Count == 1
	})
	r := fed.Results[0]
	if r.ID != tide.ID || r.URN != ard.URN(agent.Record{Publisher: a.peerID(), Name: "tide-bot"}) || r.Publisher.PeerID != a.peerID() {
		t.Errorf("federated result = %+v", r)
	}
	if !fed.Federation.Federated || fed.Federation.DHT == nil || fed.Federation.DHT.Providers == 0 {
		t.Errorf("federation = %+v", fed.Federation)
	}
	if r.Source != ard.SourceDHT || fed.Federation.DHT.Found != 1 {
		t.Errorf("the result that came through the DHT is marked %q (found %d)", r.Source, fed.Federation.DHT.Found)
	}
	// Now the mirror has it: a plain search finds it, from the mirror.
	if got := ardSearch(map[string]any{"filters": tides}); got.Count != 1 || got.Results[0].Source != ard.SourceMirror {
		t.Errorf("after federation: %+v", got.Results)
	}

	// A URN the mirror lacks: looked up in the DHT by the id it names.
	urn := ard.URN(agent.Record{Publisher: a.peerID(), Name: "weather-bot"})
	if got := ardSearch(map[string]any{"filters": map[string]any{"urn": []string{urn}}}); got.Count != 0 {
		t.Fatalf("D's mirror already has the weather agent")
	}
	var byURN ard.SearchResponse
	eventually(t, 30*time.Second, "a federated URN look-up", func() bool {
		byURN = ardSearch(map[string]any{"filters": map[string]any{"urn": []string{urn}}, "federate": true})
		return byURN.Count == 1
	})
	if byURN.Results[0].ID != weather.ID || byURN.Results[0].Source != ard.SourceDHT {
		t.Errorf("URN look-up = %+v", byURN.Results[0])
	}
}
