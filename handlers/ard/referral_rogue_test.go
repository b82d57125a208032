package ard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// Rogue heartbeats cannot make a public node refer its clients to an
// internal address: IP literals in /dns values, a user-info spoof, CGNAT,
// metadata and the IPv6 forms that embed IPv4 are refused, whatever the
// row says. Ten fresh identities that host nothing fill no slot, and an
// honest node is referred only once heard for ReferAfter.
func TestReferralsRefuseRogues(t *testing.T) {
	env := handlertest.New(t)
	ctx := context.Background()
	hosted := seedRemote(t, env.Store, "tide-bot", time.Now(), "tides")
	_, self := newPeer(t)
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	node := func(pid string, hosts int, addrs ...string) {
		t.Helper()
		n := store.Node{PeerID: pid, Name: "node-" + pid[len(pid)-4:], Version: "test", LastHeartbeat: time.Now(),
			Status: store.StatusOnline, AgentsHosted: hosts}
		for _, a := range addrs {
			n.Addrs = append(n.Addrs, a+"/p2p/"+pid)
		}
		if err := env.Store.UpsertNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	rogue := []string{
		"/dns4/127.0.0.1/tcp/21599/http",
		"/dns4/169.254.169.254/tcp/80/http",
		"/dns4/trusted.example.org@127.0.0.1/tcp/80/http",
		"/ip4/100.64.0.1/tcp/80/http",
		"/ip4/169.254.169.254/tcp/80/http",
		"/ip6/64:ff9b::7f00:1/tcp/80/http",
		"/ip6/64:ff9b::a9fe:a9fe/tcp/443/tls/http",
		"/ip6/2002:7f00:1::1/tcp/80/http",
		"/ip6/2002:a9fe:a9fe::1/tcp/443/https",
		"/ip6/::ffff:169.254.169.254/tcp/80/http",
		"/dns4/2130706433/tcp/80/http",
		"/dns4/metadata.google.internal/tcp/80/http",
	}
	for _, a := range rogue {
		_, pid := newPeer(t)
		node(pid, 1, a)
	}
	for i := range 10 { // Sybils: heard, public addresses, no listings held here
		_, pid := newPeer(t)
		node(pid, 0, fmt.Sprintf("/dns4/sybil%d.example.org/tcp/443/tls/http", i))
	}
	node(hosted.HostPeerID, 1, "/dns4/host.example.org/tcp/443/tls/http")
	_, peerHost := newPeer(t)
	node(peerHost, 3, "/dns4/peer.example.org/tcp/443/tls/http")

	h := ard.New(mirrorOnly(env.Store), env.Store, nil, "https://hub.example.org", nil)
	h.Nodes, h.Self, h.Now, h.ReferAfter = env.Store, self, now, 3*time.Minute
	ts := registry(t, h)
	tides := map[string]any{"query": map[string]any{"text": "", "filter": map[string]any{"tags": []string{"tides"}}}, "federation": "referrals"}

	got, hdr := post(t, ts, tides)
	if len(got.Referrals) != 0 || !strings.Contains(hdr.Get("AgentSite-Federation"), "heard long enough") {
		t.Fatalf("nodes first seen now are referred: %+v, %s", got.Referrals, hdr.Get("AgentSite-Federation"))
	}
	mu.Lock()
	clock = clock.Add(3 * time.Minute)
	mu.Unlock()
	got, _ = post(t, ts, tides)
	urls := map[string]bool{}
	for _, r := range got.Referrals {
		urls[r.URL] = true
	}
	if len(got.Referrals) != 2 || !urls["https://host.example.org/ard/search"] || !urls["https://peer.example.org/ard/search"] {
		t.Errorf("referrals %+v, want the two nodes hosting listings, at their public names", got.Referrals)
	}
	for _, r := range got.Referrals {
		if strings.Contains(r.URL, "sybil") || strings.Contains(r.URL, "@") {
			t.Errorf("referral to a rogue: %+v", r)
		}
	}
}
