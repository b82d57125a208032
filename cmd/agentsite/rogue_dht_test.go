package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"google.golang.org/protobuf/encoding/protodelim"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
)

// dhtPutter sends PUT_VALUE requests from the rogue straight to one node,
// the way kad-dht's client does (varint-delimited protobuf on
// /agentsite/kad/1.0.0), so each PUT lands where the test says and the
// rogue keeps no copy. A refused PUT resets the stream; the next opens
// another.
type dhtPutter struct {
	r  *rogue
	to peer.ID
	s  network.Stream
	br *bufio.Reader
}

func (r *rogue) putter(n *clusterNode) *dhtPutter { return &dhtPutter{r: r, to: n.pid()} }

func (p *dhtPutter) put(key string, val []byte) error {
	ctx, cancel := context.WithTimeout(p.r.t.Context(), 10*time.Second)
	defer cancel()
	if p.s == nil {
		s, err := p.r.h.NewStream(ctx, p.to, protocol.ID(p2p.DHTPrefix+"/kad/1.0.0"))
		if err != nil {
			return err
		}
		p.s, p.br = s, bufio.NewReader(s)
	}
	_ = p.s.SetDeadline(time.Now().Add(10 * time.Second))
	msg := &dhtpb.Message{Type: dhtpb.Message_PUT_VALUE, Key: []byte(key), Record: &recpb.Record{Key: []byte(key), Value: val}}
	_, err := protodelim.MarshalTo(p.s, msg)
	if err == nil {
		err = protodelim.UnmarshalFrom(p.br, &dhtpb.Message{})
	}
	if err != nil {
		_ = p.s.Reset()
		p.s = nil
	}
	return err
}

// rogueRecord is a valid record named name signed with key, of about
// 4.5 KB (the PUTs were 4.9 KB).
func rogueRecord(t *testing.T, key crypto.PrivKey, name string) (*agent.Record, []byte) {
	t.Helper()
	now := time.Now().UTC()
	r := &agent.Record{
		Name: name, DisplayName: "Flood", Description: strings.Repeat("x", agent.MaxDescriptionBytes),
		Seq: 1, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
	}
	env, err := agent.Seal(r, key, now)
	if err != nil {
		t.Fatal(err)
	}
	return r, env
}

// TestRogueDHTFloodIsBounded floods two real nodes' DHT stores from one
// rogue peer with valid records (docs/architecture.md "Peers are
// adversaries"): records of fresh keys, of
// which a node keeps a small allowance, then records of the rogue's own
// key, of which it keeps up to the per-peer cap. Every refusal is counted
// in /metrics, and honest records still go in and come out of the DHT.
func TestRogueDHTFloodIsBounded(t *testing.T) {
	checkNoLeaks(t)
	const (
		perPeer = 256 // p2p.DHTStoreLimits defaults
		unknown = 16
		fresh   = 700 // records of fresh publishers, to each node
		own     = 300 // records of the rogue's own key, to each node
	)
	a := startClusterNode(t, nodeOpts{})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}})
	real := []*clusterNode{a, b}
	waitfor.Until(t, 10*time.Second, "A's and B's DHTs to know each other", func() bool {
		return a.m.Node.DHT().RoutingTable().Size() >= 1 && b.m.Node.DHT().RoutingTable().Size() >= 1
	})
	r := newRogue(t)
	r.connect(real...)

	freshEnvs := make([][]byte, fresh)
	freshKeys := make([]string, fresh)
	for i := range fresh {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		rec, env := rogueRecord(t, k, fmt.Sprintf("flood-%d", i))
		freshEnvs[i], freshKeys[i] = env, "/agent/"+rec.ID
	}
	for _, n := range real {
		before := map[string]float64{}
		for _, reason := range []string{"unknown_publisher", "peer_cap"} {
			before[reason] = n.metric("agentsite_p2p_dht_puts_refused_total", "reason", reason)
		}
		p := r.putter(n)
		refusedFresh, refusedOwn := 0, 0
		for i := range fresh {
			if p.put(freshKeys[i], freshEnvs[i]) != nil {
				refusedFresh++
			}
		}
		for i := range own {
			rec, env := rogueRecord(t, r.key, fmt.Sprintf("own-flood-%d", i))
			if p.put("/agent/"+rec.ID, env) != nil {
				refusedOwn++
			}
		}
		if refusedFresh != fresh-unknown || refusedOwn != own-(perPeer-unknown) {
			t.Errorf("%s refused %d of %d fresh-key and %d of %d own-key PUTs, want %d and %d", n.peerID(),
				refusedFresh, fresh, refusedOwn, own, fresh-unknown, own-(perPeer-unknown))
		}
		st := n.m.Node.DHTStoreStats()
		if st.PerPeer[r.id.String()] != perPeer {
			t.Errorf("%s holds %d values of the rogue, want the cap %d", n.peerID(), st.PerPeer[r.id.String()], perPeer)
		}
		if st.Values > perPeer+10 || st.Bytes > 64<<20 {
			t.Errorf("%s holds %d values, %d bytes; want about the rogue's %d", n.peerID(), st.Values, st.Bytes, perPeer)
		}
		scrape := n.scrape()
		if got := scrape.sum("agentsite_p2p_dht_puts_refused_total", "reason", "unknown_publisher") - before["unknown_publisher"]; got != float64(refusedFresh) {
			t.Errorf("%s: refused{unknown_publisher} grew by %v, want %d", n.peerID(), got, refusedFresh)
		}
		if got := scrape.sum("agentsite_p2p_dht_puts_refused_total", "reason", "peer_cap") - before["peer_cap"]; got != float64(refusedOwn) {
			t.Errorf("%s: refused{peer_cap} grew by %v, want %d", n.peerID(), got, refusedOwn)
		}
		if got := scrape.sum("agentsite_p2p_dht_values"); got != float64(st.Values) {
			t.Errorf("%s: dht_values = %v, stats say %d", n.peerID(), got, st.Values)
		}
	}

	// After the flood, an honest node's new record goes into the other's
	// store and comes out of the DHT.
	honest := a.register("honest-bot", "honest")
	l, err := a.m.Store.GetAgent(t.Context(), honest.ID)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 15*time.Second, "B to hold A's new record in its DHT store", func() bool {
		return b.m.Node.DHTStoreStats().PerPeer[a.peerID()] >= 1
	})
	env, err := b.m.Node.DHT().GetValue(t.Context(), "/agent/"+honest.ID)
	if err != nil || !bytes.Equal(env, l.Envelope) {
		t.Fatalf("B's DHT look-up of A's record: %v (same envelope: %v)", err, bytes.Equal(env, l.Envelope))
	}
}

func TestDHTStoreFlags(t *testing.T) {
	var c Config
	if err := c.Parse([]string{"--dht-store-mib", "32", "--dht-values-per-peer", "100", "--record-ttl", "2h"}, env(nil), io.Discard); err != nil {
		t.Fatal(err)
	}
	want := p2p.DHTStoreLimits{MaxBytes: 32 << 20, PerPeer: 100, PerIPGroup: 1024, MaxAge: 2 * time.Hour}
	if got := c.dhtStore(); got != want {
		t.Fatalf("limits = %+v, want %+v", got, want)
	}
	c = Config{}
	if err := c.Parse([]string{"--dht-values-per-peer", "-1"}, env(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "--dht-values-per-peer") {
		t.Fatalf("a negative cap: err = %v", err)
	}
}
