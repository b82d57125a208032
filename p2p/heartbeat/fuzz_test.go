package heartbeat

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// The fuzz target of the heartbeats peers send this node (p2p's are the
// pages of both sync protocols). `make fuzz` runs it for a minute; `go
// test` runs its seeds, which are real encoded heartbeats made here from
// a fixed key and clock.

// fuzzClock is the fuzz target's now.
var fuzzClock = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// fuzzKey is a fixed key (the seeds are the same every run).
func fuzzKey(t testing.TB, b byte) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, err := crypto.UnmarshalEd25519PrivateKey(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize)))
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, id
}

// TestFuzzSeedsAreValid: the seeds are what honest peers send, so the
// fuzzer starts from inputs that pass every check (a mutation then
// reaches the deepest ones).
func TestFuzzSeedsAreValid(t *testing.T) {
	key, self := fuzzKey(t, 7)
	for i, b := range heartbeatSeeds(t, key, self) {
		if _, err := decodeHeartbeat(b, self, fuzzClock); err != nil {
			t.Errorf("heartbeat seed %d refused: %v", i, err)
		}
	}
}

// heartbeatSeeds are heartbeats as nodes send them: an old node's (status/1),
// and a status/2 round with health entries, a slice, a name and domains.
func heartbeatSeeds(t testing.TB, key crypto.PrivKey, self peer.ID) [][]byte {
	t.Helper()
	var health []agent.HostedHealth
	for i := range 3 {
		name := fmt.Sprintf("bot-%d", i)
		id, err := agent.DeriveID(key.GetPublic(), name)
		if err != nil {
			t.Fatal(err)
		}
		health = append(health, agent.HostedHealth{ID: id, Name: name, Health: agent.Health{
			State: agent.HealthHealthy, LatencyMS: 120, SuccessRate: 0.99, LastOKAt: fuzzClock.Add(-time.Minute), CheckedAt: fuzzClock.Add(-time.Minute), Uses7d: 7,
		}})
	}
	addr := "/ip4/203.0.113.7/tcp/4001/p2p/" + self.String()
	hbs := []agent.Heartbeat{
		{PeerID: self.String(), Version: "v0.9.0", Addrs: []string{addr}, AgentsHosted: 3, Load: 0.5, SentAt: fuzzClock},
		{PeerID: self.String(), Version: "v1.0.0", Addrs: []string{addr, "/dns4/node.example/tcp/443/https"}, AgentsHosted: 3, Load: 1.25, SentAt: fuzzClock.Add(-time.Second),
			Health: health, IntervalMS: 10_000, Digest: "0123456789abcdef", Name: "node-b", Domains: []string{"example.org"}},
		{PeerID: self.String(), Version: "v1.0.0", AgentsHosted: 3, SentAt: fuzzClock, Health: health[:1], IntervalMS: 2_000,
			Slice: &agent.HealthSlice{Index: 1, Count: 3}},
	}
	var out [][]byte
	for _, hb := range hbs {
		b, err := json.Marshal(hb)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecodeHeartbeat feeds arbitrary bytes to decodeHeartbeat, as a
// heartbeat signed by a fixed author, and what it accepts to
// checkHeartbeat2 (the status/2 fields). Neither may panic; what is
// accepted holds the bounds the receiver relies on, and reads back the
// same once encoded again.
func FuzzDecodeHeartbeat(f *testing.F) {
	key, self := fuzzKey(f, 7)
	for _, b := range heartbeatSeeds(f, key, self) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		hb, err := decodeHeartbeat(data, self, fuzzClock)
		if err != nil {
			if hb != nil {
				t.Fatalf("an error (%v) with a heartbeat", err)
			}
			return
		}
		checkDecodedHeartbeat(t, hb, self)
		again, err := json.Marshal(hb)
		if err != nil {
			t.Fatalf("an accepted heartbeat does not encode: %v", err)
		}
		if len(again) <= maxHeartbeatBytes {
			hb2, err := decodeHeartbeat(again, self, fuzzClock)
			if err != nil {
				t.Fatalf("an accepted heartbeat, encoded again, is refused: %v\n%s", err, again)
			}
			if b2, _ := json.Marshal(hb2); !bytes.Equal(b2, again) {
				t.Fatalf("an accepted heartbeat reads back differently:\n%s\n%s", again, b2)
			}
		}
		if err := checkHeartbeat2(hb); err == nil {
			if hb.IntervalMS <= 0 || hb.IntervalMS > agent.MaxHeartbeatInterval.Milliseconds() || len(hb.Digest) > 16 {
				t.Fatalf("checkHeartbeat2 accepts interval %d ms, digest %q", hb.IntervalMS, hb.Digest)
			}
			if s := hb.Slice; s != nil && (s.Count <= 0 || s.Index < 0 || s.Index >= s.Count || s.Count > maxSlices) {
				t.Fatalf("checkHeartbeat2 accepts slice %+v", *s)
			}
		}
	})
}

// checkDecodedHeartbeat checks what the receiver of a heartbeat relies on.
func checkDecodedHeartbeat(t *testing.T, hb *agent.Heartbeat, self peer.ID) {
	t.Helper()
	switch {
	case hb.PeerID != self.String():
		t.Fatalf("a heartbeat of %s accepted from %s", hb.PeerID, self)
	case hb.SentAt.After(fuzzClock.Add(agent.ClockSkew)) || hb.SentAt.Before(fuzzClock.Add(-10*time.Minute)):
		t.Fatalf("sent_at %v accepted at %v", hb.SentAt, fuzzClock)
	case len(hb.Addrs) > maxHeartbeatAddrs || len(hb.Version) > 64 || hb.AgentsHosted < 0 || hb.AgentsHosted > 1_000_000:
		t.Fatalf("fields out of range accepted: %d addrs, version of %d, %d agents", len(hb.Addrs), len(hb.Version), hb.AgentsHosted)
	case len(hb.Health) > agent.MaxHeartbeatHealth:
		t.Fatalf("%d health entries accepted", len(hb.Health))
	}
	if err := agent.CheckNodeName(hb.Name); err != nil {
		t.Fatalf("name %q accepted: %v", hb.Name, err)
	}
}
