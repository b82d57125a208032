package main

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// The rogue-peer suite (issue "the open planet"): real rogue libp2p peers
// with valid signatures against real nodes. Each case is something a peer
// could do to a node before admission, page limits and heartbeat rounds
// existed; each asserts that the node's holdings stay bounded, that honest
// online agents keep the first place for their words, that the rogue's
// score drops, and that nothing honest is lost.

// search is the ids of the first page of n's default search for q.
func (n *clusterNode) search(q string) []string {
	n.t.Helper()
	code, body := n.api("GET", "/api/v1/agents?limit=10&q="+url.QueryEscape(q), nil)
	if code != http.StatusOK {
		n.t.Fatalf("search %q: %d %s", q, code, body)
	}
	var page struct {
		Agents []apiAgent `json:"agents"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		n.t.Fatal(err)
	}
	var ids []string
	for _, a := range page.Agents {
		ids = append(ids, a.ID)
	}
	return ids
}

// heldFrom counts the listings n holds (any status) not published by one
// of the honest nodes.
func heldFrom(n *clusterNode, honest ...*clusterNode) int {
	count := 0
	for _, a := range n.agentIDs("all") {
		mine := false
		for _, h := range honest {
			if a.HostPeerID == h.peerID() {
				mine = true
			}
		}
		if !mine {
			count++
		}
	}
	return count
}

func TestRoguePeers(t *testing.T) {
	checkNoLeaks(t)
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: 2 * time.Second, extra: []string{"--unheard-per-hour", "100", "--publisher-rate", "30"}}
	a := startClusterNode(t, o)
	ob := o
	ob.bootstrap = []string{a.addr()}
	b := startClusterNode(t, ob)
	weather := a.register("weather-bot", "weather")
	translator := a.register("translator", "translate")
	waitfor.Until(t, 30*time.Second, "B to hold A's agents online", func() bool {
		got := b.agentIDs("online")
		_, w := got[weather.ID]
		_, tr := got[translator.ID]
		return w && tr
	})
	honestFirst := func(t *testing.T, q, id string) {
		t.Helper()
		waitfor.Until(t, 15*time.Second, "the honest agent first for "+q, func() bool {
			ids := b.search(q)
			return len(ids) > 0 && ids[0] == id
		})
	}
	nothingLost := func(t *testing.T) {
		t.Helper()
		for _, n := range []*clusterNode{a, b} {
			for _, id := range []string{weather.ID, translator.ID} {
				if code, got := n.agent(id); code != http.StatusOK || got.Status == "offline" {
					t.Fatalf("%s lost honest agent %s: %d %+v", n.peerID(), id, code, got)
				}
			}
		}
	}
	honestFirst(t, "weather", weather.ID)

	t.Run("sync flood from many identities", func(t *testing.T) {
		// Three fresh rogue identities on one machine (one IP group), each
		// serving 2,000 valid listings of 100 never-heard publishers.
		var rogues []*rogue
		for i := 0; i < 3; i++ {
			r := newRogue(t)
			r.servePaged(spam(t, 100, 20, "weather"))
			r.connect(b)
			rogues = append(rogues, r)
		}
		waitfor.Until(t, 60*time.Second, "B to refuse the rogues' syncs over quota", func() bool {
			return b.metric("agentsite_p2p_records_rejected_total", "path", "sync", "reason", "quota") >= 3*64
		})
		// Per relayer 100 listings of never-heard publishers an hour, per
		// IP group 200: whatever the number of identities.
		if held := heldFrom(b, a, b); held > 200 {
			t.Fatalf("B holds %d of the rogues' 6,000 listings; the IP group's quota is 200", held)
		}
		for _, r := range rogues {
			waitfor.Until(t, 15*time.Second, "each rogue's score to drop", func() bool {
				s, ok := b.m.Node.PeerScore(r.id)
				return b.m.Node.AdmissionPenalty(r.id) > 0 && ok && s < 0
			})
		}
		honestFirst(t, "weather", weather.ID)
		nothingLost(t)
	})

	t.Run("endless reply", func(t *testing.T) {
		// The rogue answers the first page with one JSON string of 128 MB.
		r := newRogue(t)
		var written atomic.Int64
		r.endlessReply(128<<20, &written)
		r.connect(b)
		before := b.metric("agentsite_p2p_records_rejected_total", "path", "sync", "reason", "size")
		_, err := b.m.Node.SyncFrom(t.Context(), r.id, "")
		if err == nil {
			t.Fatal("a sync reply of 128 MB was taken")
		}
		// One page is at most ~1.5 MB; what the rogue got to write past it
		// is what the stream's and the socket's windows held.
		if got := written.Load(); got > 48<<20 {
			t.Fatalf("B read %d MB of one reply before stopping", got>>20)
		}
		if after := b.metric("agentsite_p2p_records_rejected_total", "path", "sync", "reason", "size"); after <= before {
			t.Fatal("the oversized page was not counted")
		}
		nothingLost(t)
	})

	t.Run("heartbeat flood", func(t *testing.T) {
		r := newRogue(t)
		r.connect(b)
		before := b.metric("agentsite_p2p_heartbeats_received_total")
		const sent = 200
		start := time.Now().UTC()
		for i := 0; i < sent; i++ {
			hb := agent.Heartbeat{PeerID: r.id.String(), Version: "rogue", AgentsHosted: 1_000_000, SentAt: start.Add(time.Duration(i) * time.Millisecond)}
			r.publish(r.status, mustJSON(t, hb))
		}
		// Past the first, each heartbeat of the round costs the flooder
		// score; GossipSub's peer gater then drops some of the rest unread,
		// so not every one is counted.
		waitfor.Until(t, 30*time.Second, "B to ignore the flood", func() bool {
			s, ok := b.m.Node.PeerScore(r.id)
			return b.metric("agentsite_p2p_records_rejected_total", "path", "heartbeat", "reason", "flood") >= 20 && ok && s < 0
		})
		if got := b.metric("agentsite_p2p_heartbeats_received_total") - before; got > sent/4 {
			t.Fatalf("B took %v heartbeats during a flood of %d from one peer", got, sent)
		}
		// The claim of a million hosted agents is cut to what B holds of
		// the rogue's: none.
		waitfor.Until(t, 15*time.Second, "B to record the rogue's node", func() bool {
			nodes, err := b.m.Store.GetNodes(t.Context(), []string{r.id.String()})
			if err != nil || len(nodes) != 1 {
				return false
			}
			if nodes[0].AgentsHosted != 0 {
				t.Fatalf("B shows the rogue hosting %d agents; it holds none of them", nodes[0].AgentsHosted)
			}
			return true
		})
		nothingLost(t)
	})

	t.Run("heartbeats of many fresh identities", func(t *testing.T) {
		// The rogue signs one heartbeat for each of 1,200 fresh identities
		// and forwards them all: each is a valid heartbeat of a new node.
		r := newRogue(t)
		r.connect(b)
		nodes := func() int {
			counts, err := b.m.Store.CountNodes(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, c := range counts {
				total += c
			}
			return total
		}
		before := nodes()
		const sent = 1200
		for i := 0; i < sent; i++ {
			key, _, err := crypto.GenerateEd25519Key(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			pid, _ := peer.IDFromPrivateKey(key)
			hb := agent.Heartbeat{PeerID: pid.String(), Version: "rogue", SentAt: time.Now().UTC()}
			if err := r.status.Publish(t.Context(), mustJSON(t, hb), pubsub.WithSecretKeyAndPeerId(key, pid)); err != nil {
				t.Fatal(err)
			}
		}
		// A forwarder introduces at most 500 never-heard authors an hour
		// (and is held to twice the planet's size per interval).
		waitfor.Until(t, 30*time.Second, "B to refuse the authors past the forwarder's allowance", func() bool {
			return b.metric("agentsite_p2p_records_rejected_total", "path", "heartbeat", "reason", "quota")+
				b.metric("agentsite_p2p_records_rejected_total", "path", "heartbeat", "reason", "flood") > 0 &&
				b.m.Node.AdmissionPenalty(r.id) > 0
		})
		if got := nodes() - before; got > 500 {
			t.Fatalf("B made %d node rows for the rogue's %d fresh identities; one forwarder may introduce 500 an hour", got, sent)
		}
		nothingLost(t)
	})

	t.Run("gossip flood of valid records", func(t *testing.T) {
		r := newRogue(t)
		r.connect(b)
		const sent = 300
		now := time.Now().UTC()
		for i := 0; i < sent; i++ {
			rec := agent.Record{
				Name: fmt.Sprintf("weather-flood-%d", i), DisplayName: fmt.Sprintf("Weather flood %d", i), Description: "weather",
				Tags: []string{"weather"}, Version: "1.0.0",
				Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: r.id.String(), Protocol: agent.MCPProtocol}},
				Seq:       1, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
			}
			env, err := agent.Seal(&rec, r.key, now)
			if err != nil {
				t.Fatal(err)
			}
			r.publish(r.records, env)
		}
		// Past the rate each record costs the rogue score, so it is soon
		// graylisted and the rest are dropped unread.
		waitfor.Until(t, 30*time.Second, "B to ignore the flood past the publisher's rate", func() bool {
			return b.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "flood") >= 50
		})
		held := 0
		for _, l := range b.agentIDs("all") {
			if l.HostPeerID == r.id.String() {
				held++
			}
		}
		if held > sent/3 {
			t.Fatalf("B holds %d of the flood's %d records; the publisher's rate is 30 a minute", held, sent)
		}
		waitfor.Until(t, 15*time.Second, "the flooder to sink below the graylist threshold", func() bool {
			s, ok := b.m.Node.PeerScore(r.id)
			return ok && s < -80
		})
		honestFirst(t, "weather", weather.ID)
		nothingLost(t)
	})

	t.Run("forged health claim", func(t *testing.T) {
		r := newRogue(t)
		r.connect(b)
		hb := agent.Heartbeat{PeerID: r.id.String(), Version: "rogue", SentAt: time.Now().UTC(), Health: []agent.HostedHealth{
			{ID: weather.ID, Name: "weather-bot", Health: agent.Health{State: agent.HealthFailing, CheckedAt: time.Now().UTC()}},
		}}
		r.publish(r.status, mustJSON(t, hb))
		waitfor.Until(t, 15*time.Second, "the forged claim to be rejected and the rogue graylisted", func() bool {
			s, ok := b.m.Node.PeerScore(r.id)
			return ok && s < -80
		})
		if _, got := b.agent(weather.ID); got.Health.State == agent.HealthFailing {
			t.Fatal("a rogue's claim made the honest agent failing")
		}
		honestFirst(t, "weather", weather.ID)
		nothingLost(t)
	})
}

// TestAdmissionFlags: --trusted-only with --trust-peer keeps only the
// trusted publisher's listings (and still forwards the others'), and
// --block-peer refuses a peer's connections.
func TestAdmissionFlags(t *testing.T) {
	checkNoLeaks(t)
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: time.Second}
	a := startClusterNode(t, o)
	oc := o
	oc.bootstrap = []string{a.addr()}
	c := startClusterNode(t, oc)
	r := newRogue(t)
	ob := o
	ob.bootstrap = []string{a.addr(), c.addr()}
	ob.extra = []string{"--trust-peer", a.peerID(), "--trusted-only", "--block-peer", r.id.String()}
	b := startClusterNode(t, ob)
	ob2 := o
	ob2.bootstrap = []string{b.addr()}
	d := startClusterNode(t, ob2) // reaches C's gossip only through B
	waitfor.Until(t, 15*time.Second, "B to be in the mesh", func() bool {
		return b.connected(a.pid()) && b.connected(c.pid()) && d.connected(b.pid())
	})
	trusted := a.register("trusted-bot")
	other := c.register("other-bot")
	waitfor.Until(t, 15*time.Second, "B to hold the trusted publisher's listing", func() bool {
		code, _ := b.agent(trusted.ID)
		return code == http.StatusOK
	})
	waitfor.Until(t, 15*time.Second, "the untrusted listing to reach every node but B", func() bool {
		codeA, _ := a.agent(other.ID)
		codeD, _ := d.agent(other.ID)
		return codeA == http.StatusOK && codeD == http.StatusOK
	})
	if code, _ := b.agent(other.ID); code == http.StatusOK {
		t.Fatal("B, trusting only A, keeps C's listing")
	}
	if b.metric("agentsite_p2p_records_rejected_total", "reason", "untrusted") == 0 {
		t.Fatal("the untrusted listing was not counted")
	}
	if err := r.h.Connect(t.Context(), peer.AddrInfo{ID: b.pid(), Addrs: b.m.Node.Host().Addrs()}); err == nil && b.connected(r.id) {
		t.Fatal("B let a blocked peer connect")
	}
}
