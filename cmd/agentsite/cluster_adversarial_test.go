package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
)

// rogue is a libp2p host that speaks AgentSite's protocols without any of
// its checks: GossipSub without validators (and a 1 MiB message limit), a
// DHT under /agentsite that stores anything, and a catalogue sync handler
// that serves whatever the test gives it.
type rogue struct {
	t       testing.TB
	key     crypto.PrivKey
	id      peer.ID
	h       host.Host
	ps      *pubsub.PubSub
	records *pubsub.Topic
	status  *pubsub.Topic
	dht     *dht.IpfsDHT

	mu    sync.Mutex
	serve [][]byte // what the sync handler hands out
}

// permissive is the rogue's DHT validator: everything goes.
type permissive struct{}

func (permissive) Validate(string, []byte) error        { return nil }
func (permissive) Select(string, [][]byte) (int, error) { return 0, nil }

func newRogue(t testing.TB) *rogue {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	r := &rogue{t: t, key: key}
	r.id, _ = peer.IDFromPrivateKey(key)
	r.h, err = libp2p.New(libp2p.Identity(key), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		if r.records != nil {
			_ = r.records.Close()
		}
		if r.status != nil {
			_ = r.status.Close()
		}
		if r.dht != nil {
			_ = r.dht.Close()
		}
		_ = r.h.Close()
	})
	r.dht, err = dht.New(r.h, dht.Mode(dht.ModeServer), dht.ProtocolPrefix(p2p.DHTPrefix), dht.NamespacedValidator("agent", permissive{}))
	if err != nil {
		t.Fatal(err)
	}
	r.ps, err = pubsub.NewGossipSub(ctx, r.h, pubsub.WithMaxMessageSize(1<<20), pubsub.WithFloodPublish(true), pubsub.WithPeerOutboundQueueSize(4096))
	if err != nil {
		t.Fatal(err)
	}
	if r.records, err = r.ps.Join(p2p.TopicRecords); err != nil {
		t.Fatal(err)
	}
	if r.status, err = r.ps.Join(p2p.TopicStatus); err != nil {
		t.Fatal(err)
	}
	r.h.SetStreamHandler(p2p.SyncProtocol, r.serveSync)
	return r
}

// serveSync answers every catalogue page with r.serve, as the last page.
func (r *rogue) serveSync(s network.Stream) {
	defer s.Close()
	br := bufio.NewReader(s)
	enc := json.NewEncoder(s)
	for {
		if _, err := br.ReadBytes('\n'); err != nil {
			return
		}
		r.mu.Lock()
		envs := append([][]byte{}, r.serve...)
		r.mu.Unlock()
		if err := enc.Encode(map[string]any{"envelopes": envs, "next": 0}); err != nil {
			return
		}
	}
}

func (r *rogue) setServe(envs ...[]byte) {
	r.mu.Lock()
	r.serve = envs
	r.mu.Unlock()
}

func (r *rogue) connect(nodes ...*clusterNode) {
	r.t.Helper()
	for _, n := range nodes {
		if err := r.h.Connect(r.t.Context(), peer.AddrInfo{ID: n.pid(), Addrs: n.m.Node.Host().Addrs()}); err != nil {
			r.t.Fatalf("rogue connect: %v", err)
		}
	}
	waitfor.Until(r.t, 10*time.Second, "the real nodes to show up as topic peers of the rogue", func() bool {
		for _, n := range nodes {
			if !slices.Contains(r.records.ListPeers(), n.pid()) || !slices.Contains(r.status.ListPeers(), n.pid()) {
				return false
			}
		}
		return true
	})
}

func (r *rogue) publish(topic *pubsub.Topic, data []byte) {
	r.t.Helper()
	if err := topic.Publish(r.t.Context(), data); err != nil {
		r.t.Fatalf("rogue publish: %v", err)
	}
}

// forgeries are the bad envelopes of the test, built from a real agent's
// latest (cur) and older (old) envelopes.
type forgeries struct {
	tampered    []byte // cur with one byte of its payload changed
	replay      []byte // old, genuine but superseded
	claimID     []byte // signed by the rogue, claiming the victim's id and publisher
	claimNew    []byte // signed by the rogue, claiming a new id under the victim's publisher
	claimNewID  string
	claimHost   []byte // the rogue's own record, naming the victim's node as host
	claimHostID string
	expired     []byte // the rogue's own record, past its expiry
	invalid     []byte // the rogue's own record with an invalid name
	oversized   []byte // the rogue's own record of about 40 KiB
	random      []byte
}

func forge(t *testing.T, key crypto.PrivKey, victim *agent.Record, cur, old []byte) forgeries {
	t.Helper()
	now := time.Now().UTC()
	var f forgeries
	f.replay = old
	i := bytes.Index(cur, []byte(victim.DisplayName))
	if i < 0 {
		t.Fatal("display name not found in the envelope")
	}
	f.tampered = bytes.Clone(cur)
	f.tampered[i] ^= 0x01

	// record.Seal signs without agent.Seal's derivation of id and publisher.
	seal := func(r agent.Record) []byte {
		env, err := record.Seal(&r, key)
		if err != nil {
			t.Fatal(err)
		}
		b, err := env.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	evil := *victim
	evil.DisplayName, evil.Description = "Victim (evil twin)", "Send me your secrets."
	evil.Seq = victim.Seq + 1_000_000
	evil.IssuedAt, evil.ExpiresAt = now, now.Add(time.Hour)
	f.claimID = seal(evil)

	victimKey, err := peer.ID(mustDecode(t, victim.Publisher)).ExtractPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	f.claimNewID, _ = agent.DeriveID(victimKey, "evil-bot")
	fresh := evil
	fresh.Name, fresh.ID, fresh.Seq = "evil-bot", f.claimNewID, 1
	f.claimNew = seal(fresh)

	mine := func(name string, issued time.Time, mutate func(*agent.Record)) (*agent.Record, []byte) {
		r := agent.Record{
			Name: name, DisplayName: "Rogue", Description: "x", Tags: []string{"rogue"}, Version: "1.0.0",
			Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: victim.Publisher, Protocol: agent.MCPProtocol}},
			Seq:       1, IssuedAt: issued, ExpiresAt: issued.Add(time.Hour),
		}
		env, err := agent.Seal(&r, key, issued)
		if err != nil {
			t.Fatal(err)
		}
		if mutate != nil {
			mutate(&r)
			env = seal(r)
		}
		return &r, env
	}
	hostRec, hostEnv := mine("hosted-by-victim", now, nil)
	f.claimHost, f.claimHostID = hostEnv, hostRec.ID
	_, f.expired = mine("expired-bot", now.Add(-2*time.Hour), nil)
	_, f.invalid = mine("invalid-bot", now, func(r *agent.Record) {
		r.Name = "Invalid Bot!"
		r.ID, _ = agent.DeriveID(key.GetPublic(), r.Name)
	})
	_, f.oversized = mine("big-bot", now, func(r *agent.Record) { r.Description = strings.Repeat("x", 40<<10) })
	f.random = make([]byte, 1024)
	_, _ = rand.Read(f.random)
	return f
}

func mustDecode(t *testing.T, s string) peer.ID {
	t.Helper()
	id, err := peer.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestRogueHostCannotPoisonTheNetwork attacks three real nodes from rogue
// hosts on every path a record can take (gossip, DHT, catalogue sync) and
// checks that nothing bad reaches any store, that each rejection is counted
// in /metrics, that the rogue's GossipSub score collapses, and that a peer
// that keeps sending bad records is blocked and disconnected.
func TestRogueHostCannotPoisonTheNetwork(t *testing.T) {
	checkNoLeaks(t)
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: time.Second} // no refreshes: the victim's seq stays put
	a := startClusterNode(t, o)
	ob := o
	ob.bootstrap = []string{a.addr()}
	b := startClusterNode(t, ob)
	oc := ob
	oc.postgres = true
	c := startClusterNode(t, oc)
	real := []*clusterNode{a, b, c}

	// A puts its records into the DHT only once it has DHT peers.
	waitfor.Until(t, 10*time.Second, "A's DHT to know B and C", func() bool {
		return a.m.Node.DHT().RoutingTable().Size() >= 2
	})
	// The victim: an agent of A, updated once, so an older genuine
	// envelope exists to replay.
	victim := a.register("victim-bot", "victim")
	old, err := a.m.Store.GetAgent(t.Context(), victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	code, body := a.api("PUT", "/api/v1/agents/"+victim.ID, map[string]any{
		"name": "victim-bot", "display_name": "Victim v2", "tags": []string{"victim"},
		"backend": map[string]string{"kind": "builtin", "builtin": "echo"},
	})
	if code != 200 {
		t.Fatalf("update victim: %d %s", code, body)
	}
	cur, err := a.m.Store.GetAgent(t.Context(), victim.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range real {
		waitfor.Until(t, 15*time.Second, "every node to hold the victim's latest seq", func() bool {
			_, got := n.agent(victim.ID)
			return got.Seq == cur.Record.Seq
		})
	}
	// The victim's record must be in the DHT before the rogue's forgeries
	// compete with it there.
	waitfor.Until(t, 15*time.Second, "the victim's latest record in the DHT", func() bool {
		env, err := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+victim.ID)
		return err == nil && bytes.Equal(env, cur.Envelope)
	})

	var forgedIDs []string
	intact := func(t *testing.T) {
		t.Helper()
		for _, n := range real {
			got, err := n.m.Store.GetAgent(t.Context(), victim.ID)
			if err != nil {
				t.Fatalf("%s lost the victim: %v", n.peerID(), err)
			}
			if got.Record.Seq != cur.Record.Seq || got.Record.DisplayName != "Victim v2" || !bytes.Equal(got.Envelope, cur.Envelope) || got.HostPeerID != a.peerID() {
				t.Fatalf("%s: victim changed to seq %d %q host %s", n.peerID(), got.Record.Seq, got.Record.DisplayName, got.HostPeerID)
			}
			page, err := n.m.Store.SearchAgents(t.Context(), store.SearchQuery{Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline}, Limit: store.MaxLimit})
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Listings) != 1 {
				var names []string
				for _, l := range page.Listings {
					names = append(names, fmt.Sprintf("%s (publisher %s, host %s, local %v)", l.Record.Name, l.Record.Publisher, l.HostPeerID, l.Local))
				}
				t.Fatalf("%s lists %d agents, want only the victim: %v", n.peerID(), len(page.Listings), names)
			}
			if local, _ := n.m.Store.ListLocal(t.Context()); n != a && len(local) != 0 || n == a && len(local) != 1 {
				t.Fatalf("%s hosts %d agents", n.peerID(), len(local))
			}
		}
	}
	graylisted := func(t *testing.T, r *rogue) {
		t.Helper()
		for _, n := range real {
			waitfor.Until(t, 10*time.Second, "the rogue's peer score to fall below the graylist threshold", func() bool {
				s, ok := n.m.Node.PeerScore(r.id)
				return ok && s < -80
			})
		}
	}

	// Gossip: one fresh rogue per kind of forgery, because the first
	// invalid message already graylists a rogue and the next ones would be
	// dropped unseen.
	type forged = func(forgeries) []byte
	for _, tc := range []struct {
		name         string
		status       bool // on agentsite/status/1
		data         forged
		path, reason string
	}{
		{"forged signature", false, func(f forgeries) []byte { return f.tampered }, "gossip", "signature"},
		{"random bytes", false, func(f forgeries) []byte { return f.random }, "gossip", "signature"},
		{"replay of an old seq by another peer", false, func(f forgeries) []byte { return f.replay }, "gossip", "sender"},
		{"own key claiming the victim's id", false, func(f forgeries) []byte { return f.claimID }, "gossip", "key"},
		{"own key claiming a new id of the victim's node", false, func(f forgeries) []byte { return f.claimNew }, "gossip", "key"},
		{"own record claiming the victim's node as host", false, func(f forgeries) []byte { return f.claimHost }, "gossip", "key"},
		{"expired", false, func(f forgeries) []byte { return f.expired }, "gossip", "expired"},
		{"invalid fields", false, func(f forgeries) []byte { return f.invalid }, "gossip", "invalid"},
		{"40 KiB record", false, func(f forgeries) []byte { return f.oversized }, "gossip", "size"},
		{"heartbeat that is not JSON", true, func(forgeries) []byte { return []byte(`{"peer_id": "`) }, "heartbeat", "malformed"},
		{"heartbeat for another peer", true, func(forgeries) []byte {
			return mustJSON(t, agent.Heartbeat{PeerID: a.peerID(), Version: "x", SentAt: time.Now().UTC()})
		}, "heartbeat", "malformed"},
	} {
		t.Run("gossip/"+tc.name, func(t *testing.T) {
			r := newRogue(t)
			fg := forge(t, r.key, &cur.Record, cur.Envelope, old.Envelope)
			forgedIDs = append(forgedIDs, fg.claimNewID, fg.claimHostID)
			r.connect(real...)
			before := map[*clusterNode]float64{}
			for _, n := range real {
				before[n] = n.metric("agentsite_p2p_records_rejected_total", "path", tc.path, "reason", tc.reason)
			}
			topic := r.records
			if tc.status {
				topic = r.status
			}
			r.publish(topic, tc.data(fg))
			for _, n := range real {
				waitfor.Until(t, 10*time.Second, fmt.Sprintf("rejected{path=%s,reason=%s} to grow", tc.path, tc.reason), func() bool {
					return n.metric("agentsite_p2p_records_rejected_total", "path", tc.path, "reason", tc.reason) > before[n]
				})
			}
			graylisted(t, r)
			intact(t)
		})
	}

	t.Run("gossip/200 KiB frame", func(t *testing.T) {
		r := newRogue(t)
		r.connect(real...)
		size := map[*clusterNode]float64{}
		sig := map[*clusterNode]float64{}
		for _, n := range real {
			size[n] = n.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "size")
			sig[n] = n.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "signature")
		}
		streams := map[*clusterNode]string{}
		for _, n := range real {
			waitfor.Until(t, 5*time.Second, "the rogue's GossipSub stream to the node", func() bool {
				streams[n] = inboundMeshsub(n, r.id)
				return streams[n] != ""
			})
		}
		big := make([]byte, 200<<10)
		_, _ = rand.Read(big)
		r.publish(r.records, big)
		// The node reads the frame's length, refuses it and resets the
		// stream (the rogue may open another); the frame never reaches a
		// validator, or it would count as "size" (or "signature").
		for _, n := range real {
			waitfor.Until(t, 10*time.Second, "the node to reset the rogue's stream", func() bool { return inboundMeshsub(n, r.id) != streams[n] })
			if got := n.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "size"); got != size[n] {
				t.Errorf("%s validated the 200 KiB frame (size rejections %v → %v)", n.peerID(), size[n], got)
			}
			if got := n.metric("agentsite_p2p_records_rejected_total", "path", "gossip", "reason", "signature"); got != sig[n] {
				t.Errorf("%s validated the 200 KiB frame (signature rejections %v → %v)", n.peerID(), sig[n], got)
			}
		}
		intact(t)
	})

	// The main rogue goes on to the DHT and catalogue sync, until it is
	// blocked.
	r := newRogue(t)
	fg := forge(t, r.key, &cur.Record, cur.Envelope, old.Envelope)
	forgedIDs = append(forgedIDs, fg.claimNewID, fg.claimHostID)
	r.connect(real...)
	r.publish(r.records, fg.tampered)
	graylisted(t, r)

	t.Run("dht", func(t *testing.T) {
		waitfor.Until(t, 10*time.Second, "the rogue's DHT to know the real nodes", func() bool {
			return r.dht.RoutingTable().Size() >= len(real)
		})
		before := map[*clusterNode]float64{}
		for _, n := range real {
			before[n] = n.metric("agentsite_p2p_records_rejected_total", "path", "dht")
		}
		for _, put := range []struct {
			key string
			val []byte
		}{
			{"/agent/" + victim.ID, fg.claimID},
			{"/agent/" + victim.ID, fg.tampered},
			{"/agent/" + fg.claimNewID, fg.claimNew},
			{"/agent/" + fg.claimHostID, fg.claimHost},
			{"/agent/" + victim.ID, fg.replay}, // genuine but older: the DHT's Select keeps the newer
		} {
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			_ = r.dht.PutValue(ctx, put.key, put.val) // fails: every real node refuses
			cancel()
		}
		for _, n := range real {
			waitfor.Until(t, 10*time.Second, "the forged DHT puts to be rejected", func() bool {
				return n.metric("agentsite_p2p_records_rejected_total", "path", "dht") >= before[n]+4
			})
		}
		// Look-ups ask the rogue too (it is among the closest peers) and
		// get the genuine record; the forged ids stay unknown.
		for _, n := range real {
			rec, err := n.m.Node.Lookup(t.Context(), victim.ID)
			if err != nil {
				t.Fatalf("%s: look up the victim: %v", n.peerID(), err)
			}
			if rec.Seq != cur.Record.Seq || rec.DisplayName != "Victim v2" {
				t.Errorf("%s: DHT look-up gave seq %d %q", n.peerID(), rec.Seq, rec.DisplayName)
			}
			for _, id := range []string{fg.claimNewID, fg.claimHostID} {
				if _, err := n.m.Node.Lookup(t.Context(), id); err == nil {
					t.Errorf("%s: DHT look-up of forged id %s succeeded", n.peerID(), id)
				}
				if code, _ := n.agent(id); code != 404 {
					t.Errorf("%s: GET /api/v1/agents/%s = %d, want 404", n.peerID(), id, code)
				}
			}
		}
		intact(t)
	})

	t.Run("sync", func(t *testing.T) {
		// More than the strike limit (10) of bad records, plus a genuine
		// old one, which is dropped but is no strike.
		r.setServe(fg.replay, fg.tampered, fg.claimID, fg.claimNew, fg.claimHost, fg.expired, fg.invalid,
			fg.oversized, fg.random, fg.random[:100], fg.random[:10], []byte("{}"), cur.Envelope)
		before := map[*clusterNode]float64{}
		replays := map[*clusterNode]float64{}
		for _, n := range real {
			before[n] = n.metric("agentsite_p2p_records_rejected_total", "path", "sync")
			replays[n] = n.metric("agentsite_p2p_records_rejected_total", "path", "sync", "reason", "replay")
		}
		// Reconnect, so every real node syncs from the rogue again.
		for _, n := range real {
			_ = r.h.Network().ClosePeer(n.pid())
		}
		waitfor.Until(t, 10*time.Second, "the rogue to be disconnected", func() bool {
			for _, n := range real {
				if n.connected(r.id) {
					return false
				}
			}
			return true
		})
		for _, n := range real {
			if err := r.h.Connect(t.Context(), peer.AddrInfo{ID: n.pid(), Addrs: n.m.Node.Host().Addrs()}); err != nil {
				t.Fatalf("rogue reconnect: %v", err)
			}
		}
		for _, n := range real {
			waitfor.Until(t, 10*time.Second, "the rogue to be blocked and disconnected", func() bool {
				return n.m.Node.Gater().Blocked(r.id) && !n.connected(r.id)
			})
			if got := n.metric("agentsite_p2p_records_rejected_total", "path", "sync"); got < before[n]+11 {
				t.Errorf("%s: sync rejections %v → %v, want 11 more", n.peerID(), before[n], got)
			}
			if got := n.metric("agentsite_p2p_records_rejected_total", "path", "sync", "reason", "replay"); got != replays[n]+1 {
				t.Errorf("%s: sync replays %v → %v, want one more", n.peerID(), replays[n], got)
			}
			if got := n.metric("agentsite_p2p_peers_blocked_total"); got < 1 {
				t.Errorf("%s: peers_blocked_total = %v", n.peerID(), got)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			err := r.h.Connect(ctx, peer.AddrInfo{ID: n.pid(), Addrs: n.m.Node.Host().Addrs()})
			cancel()
			if err == nil && n.connected(r.id) {
				t.Errorf("%s let the blocked rogue connect again", n.peerID())
			}
		}
		intact(t)
	})

	// Nothing any rogue sent made it into any store, and the honest nodes
	// did not fall out with each other.
	intact(t)
	for _, n := range real {
		for _, p := range real {
			if n.m.Node.Gater().Blocked(p.pid()) {
				t.Errorf("%s blocks honest %s", n.peerID(), p.peerID())
			}
		}
		for _, id := range forgedIDs {
			if l, err := n.m.Store.GetAgent(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s stores forged id %s: %+v %v", n.peerID(), id, l.Record, err)
			}
		}
	}
	// Still a working network: an honest update spreads.
	code, body = a.api("PUT", "/api/v1/agents/"+victim.ID, map[string]any{
		"name": "victim-bot", "display_name": "Victim v3", "tags": []string{"victim"},
		"backend": map[string]string{"kind": "builtin", "builtin": "echo"},
	})
	if code != 200 {
		t.Fatalf("update victim: %d %s", code, body)
	}
	for _, n := range real {
		waitfor.Until(t, 10*time.Second, "an honest update after the attacks to spread", func() bool {
			_, got := n.agent(victim.ID)
			return got.DisplayName == "Victim v3"
		})
	}
}

// inboundMeshsub is the id of the GossipSub stream n has open from p, or
// "" if there is none.
func inboundMeshsub(n *clusterNode, p peer.ID) string {
	for _, c := range n.m.Node.Host().Network().ConnsToPeer(p) {
		for _, s := range c.GetStreams() {
			if strings.HasPrefix(string(s.Protocol()), "/meshsub/") && s.Stat().Direction == network.DirInbound {
				return s.ID()
			}
		}
	}
	return ""
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
