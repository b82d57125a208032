package heartbeat

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// A heartbeat's domains are checked like its other fields: normalised
// ones are read back, too many, unnormalised, repeated or non-domains
// refuse the whole heartbeat. A heartbeat without the field (an older
// node's) decodes as none, and one with it decodes in a struct that lacks
// it (what an older node does: encoding/json skips unknown fields).
func TestHeartbeatDomains(t *testing.T) {
	_, self := newKey(t)
	now := time.Now()
	encode := func(domains []string) []byte {
		b, err := json.Marshal(agent.Heartbeat{PeerID: self.String(), Version: "v", SentAt: now.UTC(), IntervalMS: 10_000, Domains: domains})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, ds := range [][]string{nil, {"example.org"}, {"a.example", "b.example"}} {
		hb, err := decodeHeartbeat(encode(ds), self, now)
		if err != nil || !slices.Equal(hb.Domains, ds) {
			t.Errorf("domains %q: %+v, %v; want them read back", ds, hb, err)
		}
	}
	many := make([]string, agent.MaxHeartbeatDomains+1)
	for i := range many {
		many[i] = strings.Repeat("d", i+1) + ".example"
	}
	for _, ds := range [][]string{many, {"Example.org"}, {"example.org."}, {"localhost"}, {"a.example", "a.example"}, {"ex ample.org"}} {
		if _, err := decodeHeartbeat(encode(ds), self, now); err == nil {
			t.Errorf("domains %q accepted, want the heartbeat refused", ds)
		}
	}
	var old struct {
		PeerID string `json:"peer_id"`
		Name   string `json:"name"`
	}
	if err := json.Unmarshal(encode([]string{"example.org"}), &old); err != nil || old.PeerID != self.String() {
		t.Errorf("an older node's decoding: %+v, %v", old, err)
	}
}

// A heartbeat's addresses are checked as it is received: the ones no one
// should be sent to (an IP literal or a user-info spoof in a /dns value,
// an IPv6 form embedding IPv4) are dropped and the round is kept; LAN and
// loopback addresses stay (nodes on one network announce them).
func TestHeartbeatAddrsChecked(t *testing.T) {
	_, self := newKey(t)
	now := time.Now()
	good := []string{"/ip4/127.0.0.1/tcp/4001", "/dns4/agents.example.org/tcp/443/tls/http"}
	bad := []string{"/dns4/127.0.0.1/tcp/21599/http", "/dns4/169.254.169.254/tcp/80/http",
		"/dns4/trusted.example.org@127.0.0.1/tcp/80/http", "/ip6/64:ff9b::a9fe:a9fe/tcp/80/http", "/ip6/2002:7f00:1::/tcp/80/http"}
	b, err := json.Marshal(agent.Heartbeat{PeerID: self.String(), Version: "v", SentAt: now.UTC(), IntervalMS: 10_000,
		Addrs: append(slices.Clone(good), bad...)})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := decodeHeartbeat(b, self, now)
	if err != nil {
		t.Fatalf("the round is refused: %v", err)
	}
	if !slices.Equal(hb.Addrs, good) {
		t.Errorf("addrs kept = %v, want %v", hb.Addrs, good)
	}
}
