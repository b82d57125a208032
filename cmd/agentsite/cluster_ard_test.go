package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// ARD federation on a three-node planet: D mirrors nothing
// tagged "tides"; its registry answers from the mirror (nothing), and with
// federate: true finds A's agent through the DHT's tag providers, marked
// as such; a URN the mirror lacks is looked up in the DHT by its id. In
// mode "referrals" D refers to A's registry, which announces its HTTP
// address in its heartbeats and hosts the listing D holds, not to B's
// (it hosts nothing), and never to itself.
func TestARDFederatesThroughTheDHT(t *testing.T) {
	aFlags, aURL := announceHTTP(t)
	bFlags, bURL := announceHTTP(t)
	dFlags, dURL := announceHTTP(t)
	a := startClusterNode(t, nodeOpts{ttl: time.Hour, extra: aFlags})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{tcpAddr(t, a)}, ttl: time.Hour, extra: bFlags})
	tide := a.register("tide-bot", "tides")
	weather := a.register("weather-bot", "weather")
	registered := time.Now()
	waitfor.Until(t, 15*time.Second, "B to learn both agents", func() bool { return b.hasAll(tide.ID, weather.ID) })
	waitfor.Until(t, 15*time.Second, "the DHT to hold A's records", func() bool {
		_, err1 := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+tide.ID)
		_, err2 := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+weather.ID)
		return err1 == nil && err2 == nil
	})
	// D joins after the gossip went by, without catalogue sync (as in
	// TestLookupBeyondTheCache).
	<-time.After(time.Until(registered.Add(time.Duration(pubsub.GossipSubHistoryLength+1) * pubsub.GossipSubHeartbeatInterval)))
	d := startClusterNode(t, nodeOpts{bootstrap: []string{tcpAddr(t, b)}, ttl: time.Hour, extra: append(dFlags, "--sync-on-connect=false")})
	waitfor.Until(t, 10*time.Second, "D to connect", func() bool { return d.m.Node.PeerCount() > 0 })

	ardSearch := func(filter map[string]any, federate bool, mode ...string) (ard.SearchResponse, string) {
		t.Helper()
		body := map[string]any{"query": map[string]any{"text": "", "filter": filter}}
		if federate {
			body["federate"], body["deadlineMs"] = true, 10000
		}
		if len(mode) > 0 {
			body["federation"] = mode[0]
		}
		resp, err := http.Post(d.m.HTTPURL()+"/ard/search", "application/json", bytes.NewReader(mustJSON(t, body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST /ard/search %v: %d %s", body, resp.StatusCode, raw)
		}
		var out ard.SearchResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("decode: %v: %s", err, raw)
		}
		return out, resp.Header.Get("AgentSite-Federation")
	}
	tides := map[string]any{"tags": []string{"tides"}}
	if got, fed := ardSearch(tides, false); len(got.Results) != 0 || !strings.Contains(fed, "federated=?0") {
		t.Fatalf("D's mirror already has tides agents: %+v; the test proves nothing", got)
	}

	var fed ard.SearchResponse
	var how string
	var took time.Duration
	waitfor.Until(t, 30*time.Second, "a federated search to find the tides agent", func() bool {
		began := time.Now()
		fed, how = ardSearch(tides, true)
		took = time.Since(began)
		return len(fed.Results) == 1
	})
	t.Logf("federated search: %s in %s (the whole request)", how, took.Round(time.Millisecond))
	r := fed.Results[0]
	if r.Identifier != ard.URN(agent.Record{Publisher: a.peerID(), Name: "tide-bot"}) || r.Metadata["agentsite.host"] != a.peerID() {
		t.Errorf("federated result = %+v", r)
	}
	if !strings.Contains(how, "federated=?1") || strings.Contains(how, "providers=0") || !strings.Contains(how, "found=1") {
		t.Errorf("AgentSite-Federation = %s", how)
	}
	if r.Metadata["agentsite.via"] != ard.ViaDHT {
		t.Errorf("the result that came through the DHT is marked %v", r.Metadata["agentsite.via"])
	}
	// Now the mirror has it: a plain search finds it, from the mirror.
	if got, _ := ardSearch(tides, false); len(got.Results) != 1 || got.Results[0].Metadata["agentsite.via"] != ard.ViaMirror {
		t.Errorf("after federation: %+v", got.Results)
	}

	// An identifier the mirror lacks: looked up in the DHT by the id it
	// names.
	byID := map[string]any{"identifier": []string{ard.URN(agent.Record{Publisher: a.peerID(), Name: "weather-bot"})}}
	if got, _ := ardSearch(byID, false); len(got.Results) != 0 {
		t.Fatalf("D's mirror already has the weather agent")
	}
	var found ard.SearchResponse
	waitfor.Until(t, 30*time.Second, "a federated identifier look-up", func() bool {
		found, _ = ardSearch(byID, true)
		return len(found.Results) == 1
	})
	if found.Results[0].Metadata["agentsite.id"] != weather.ID || found.Results[0].Metadata["agentsite.via"] != ard.ViaDHT {
		t.Errorf("identifier look-up = %+v", found.Results[0])
	}

	// Referrals: the registries of the nodes D hears (their heartbeats
	// carry the announced /http address) that host listings D holds:
	// A's, not B's (it hosts nothing), never D's own.
	var refs ard.SearchResponse
	var refHow string
	waitfor.Until(t, 30*time.Second, "D to refer to A's registry", func() bool {
		refs, refHow = ardSearch(tides, false, ard.ModeReferrals)
		return len(refs.Referrals) == 1
	})
	urls := map[string]string{}
	for _, r := range refs.Referrals {
		urls[r.URL] = r.Identifier
	}
	if urls[aURL] != ard.URNIn(a.peerID(), ard.NamespaceRegistry, "ard") || urls[bURL] != "" ||
		urls[dURL] != "" || len(refs.Results) != 1 || !strings.Contains(refHow, "referrals=1") {
		t.Errorf("referrals = %+v (D is %s), results %d, %s", refs.Referrals, dURL, len(refs.Results), refHow)
	}
	// A, which hosts the tides agent, comes first.
	if refs.Referrals[0].URL != aURL {
		t.Errorf("the host of the page's listing is not referred first: %+v", refs.Referrals)
	}
	// A referral is a registry that answers: A's search route.
	resp, err := http.Post(refs.Referrals[0].URL, "application/json", strings.NewReader(`{"query":{"text":"tide"}}`))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "tide-bot") {
		t.Errorf("POST %s: %d %s", refs.Referrals[0].URL, resp.StatusCode, raw)
	}
}

// announceHTTP is the flags of a node that serves HTTP on a port chosen
// now and announces it in its heartbeats in libp2p's notation
// (/ip4/127.0.0.1/tcp/<port>/http), and the ARD search route there.
func announceHTTP(t *testing.T) (flags []string, search string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return []string{"--http-addr", fmt.Sprintf("127.0.0.1:%d", port), "--announce", fmt.Sprintf("/ip4/127.0.0.1/tcp/%d/http", port)},
		fmt.Sprintf("http://127.0.0.1:%d/ard/search", port)
}

// tcpAddr is n's first libp2p address that is not its announced HTTP one
// (addr() may pick either: they are sorted).
func tcpAddr(t *testing.T, n *clusterNode) string {
	t.Helper()
	for _, a := range n.m.Node.Addrs() {
		if !strings.Contains(a, "/http") {
			return a
		}
	}
	t.Fatalf("%s has no libp2p address: %v", n.peerID(), n.m.Node.Addrs())
	return ""
}
