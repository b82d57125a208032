package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// A rogue peer that hosts a listing heartbeats every address a client
// must never be sent to, beside one public name: a node reached at a
// public origin refers clients to the public name only, and the node row
// keeps none of the others (they are dropped as the heartbeat arrives).
func TestARDReferralsUnderRogueHeartbeats(t *testing.T) {
	n := startClusterNode(t, nodeOpts{ttl: time.Hour, extra: []string{"--public-url", "https://hub.example.org"}})
	r := newRogue(t)
	r.connect(n)
	_, env := rogueRecord(t, r.key, "rogue-bot")
	r.publish(r.records, env)
	// Dropped as the heartbeat arrives: a /dns value that is no host
	// name, an IPv6 form embedding an IPv4 address.
	rogue := []string{
		"/dns4/127.0.0.1/tcp/21599/http",
		"/dns4/169.254.169.254/tcp/80/http",
		"/dns4/trusted.example.org@127.0.0.1/tcp/80/http",
		"/ip6/64:ff9b::7f00:1/tcp/80/http",
		"/ip6/64:ff9b::a9fe:a9fe/tcp/443/tls/http",
		"/ip6/2002:a9fe:a9fe::1/tcp/443/https",
		"/ip6/::ffff:169.254.169.254/tcp/80/http",
	}
	// Kept (a LAN peer announces such addresses), never referred to.
	special := []string{"/ip4/100.64.0.1/tcp/80/http", "/ip4/169.254.169.254/tcp/80/http", "/ip4/127.0.0.1/tcp/8080/http"}
	addrs := append(append(slices.Clone(rogue), special...), "/dns4/rogue.example.org/tcp/443/tls/http")
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() { // a heartbeat as often as the node's own, as an older node on status/1
		tick := time.NewTicker(testHeartbeat)
		defer tick.Stop()
		for {
			b, _ := json.Marshal(agent.Heartbeat{PeerID: r.id.String(), Version: "rogue", SentAt: time.Now().UTC(), AgentsHosted: 1, Addrs: addrs})
			_ = r.status.Publish(t.Context(), b)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	referrals := func() []ard.Referral {
		t.Helper()
		body := `{"query":{"text":"","filter":{}},"federation":"referrals"}`
		resp, err := http.Post(n.m.HTTPURL()+"/ard/search", "application/json", bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var out ard.SearchResponse
		if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
			t.Fatalf("POST /ard/search: %d %s", resp.StatusCode, raw)
		}
		return out.Referrals
	}
	var got []ard.Referral
	waitfor.Until(t, 30*time.Second, "the rogue's public name to be referred", func() bool {
		got = referrals()
		return len(got) > 0
	})
	if len(got) != 1 || got[0].URL != "https://rogue.example.org/ard/search" {
		t.Errorf("referrals = %+v, want the rogue's public name only", got)
	}
	nodes, err := n.m.Store.GetNodes(t.Context(), []string{r.id.String()})
	if err != nil || len(nodes) != 1 {
		t.Fatalf("the rogue's row: %v, %v", nodes, err)
	}
	for _, a := range nodes[0].Addrs {
		if slices.Contains(rogue, a) || strings.Contains(a, "@") {
			t.Errorf("the row keeps %s, dropped on receipt", a)
		}
	}
}
