package p2p

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/prometheus/client_golang/prometheus"
)

func startBare(t *testing.T, cfg Config) *Node {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ListenAddrs == nil {
		cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	}
	n, err := New(context.Background(), key, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func TestAnnouncedAddressIsAdvertised(t *testing.T) {
	n := startBare(t, Config{Announce: []string{"/ip4/203.0.113.7/tcp/4001"}})
	want := "/ip4/203.0.113.7/tcp/4001/p2p/" + n.PeerID()
	if !slices.Contains(n.Addrs(), want) {
		t.Fatalf("addrs = %v, want %s among them", n.Addrs(), want)
	}
}

func TestAnnounceRefusesBadAddresses(t *testing.T) {
	key, _, _ := crypto.GenerateEd25519Key(nil)
	for _, a := range []string{"203.0.113.7:4001", "/ip4/203.0.113.7/tcp/4001/p2p/12D3KooWGzxzKZYveHXtpG6AsrUJBcWxHBFS2HsEoGTxrMLvKXtf"} {
		_, err := New(context.Background(), key, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Announce: []string{a}}, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), "announce address") {
			t.Errorf("announce %q: err = %v", a, err)
		}
	}
}

// A node on loopback alone cannot learn its reachability, holds no relay
// reservation and has no peers.
func TestNATStatusOfALoneNode(t *testing.T) {
	n := startBare(t, Config{})
	st := n.NAT()
	if st.Reachability != ReachabilityUnknown || st.RelayAddrs == nil || len(st.RelayAddrs) != 0 ||
		st.DirectPeers != 0 || st.RelayedPeers != 0 || st.RelayService {
		t.Fatalf("status = %+v", st)
	}
}

func TestPeerKindsCountsDirectPeers(t *testing.T) {
	a := startBare(t, Config{})
	b := startBare(t, Config{})
	if err := a.Connect(t.Context(), b.Host().Peerstore().PeerInfo(b.Host().ID())); err != nil {
		t.Fatal(err)
	}
	if d, r := a.PeerKinds(); d != 1 || r != 0 {
		t.Fatalf("direct, relayed = %d, %d", d, r)
	}
	if !a.DirectTo(b.Host().ID()) {
		t.Fatal("no direct connection seen")
	}
}

func TestNATMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	startBare(t, Config{Registerer: reg})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetGauge().GetValue()
		}
	}
	for name, want := range map[string]float64{
		"agentsite_p2p_reachability/unknown": 1,
		"agentsite_p2p_reachability/public":  0,
		"agentsite_p2p_relay_addrs":          0,
		"agentsite_p2p_direct_peers":         0,
		"agentsite_p2p_relayed_peers":        0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
}
