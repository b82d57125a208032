package heartbeat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"google.golang.org/protobuf/proto"

	"github.com/agentsite/agentsite/agent"
)

// hostedAgents makes n local agents of key with names of the longest
// allowed length: id → name.
func hostedAgents(t *testing.T, key crypto.PrivKey, n int) map[string]string {
	t.Helper()
	out := make(map[string]string, n)
	for i := range n {
		name := fmt.Sprintf("%s-%04d", strings.Repeat("a", agent.MaxNameLen-5), i)
		id, err := agent.DeriveID(key.GetPublic(), name)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = name
	}
	return out
}

// worstHealth is a summary whose every field is as long as it can be once
// normalised: the largest latency, a three-decimal rate, both times set
// (with nanoseconds and a zone, which normalising cuts).
func worstHealth(now time.Time) agent.Health {
	zone := time.FixedZone("far", -11*3600-30*60)
	return agent.Health{
		State: agent.HealthDegraded, LatencyMS: agent.MaxHealthLatencyMS + 5, SuccessRate: 0.123456789,
		LastOKAt: now.Add(-time.Hour + 123456789).In(zone), CheckedAt: now.Add(-123456789).In(zone), Uses7d: agent.MaxUses7d + 5,
	}
}

// A host of 1,000 agents stays under the gossip size cap: its heartbeat is
// split into messages of at most MaxHeartbeatHealth entries, each of which
// (wrapped in a signed pubsub RPC frame) fits maxGossipSize and is
// accepted by a receiver; together they carry every agent once.
func TestHeartbeatOf1000AgentsStaysUnderTheGossipCap(t *testing.T) {
	key, self := newKey(t)
	now := time.Now()
	local := hostedAgents(t, key, 1000)
	src := func() map[string]agent.Health {
		out := map[string]agent.Health{}
		for id := range local {
			out[id] = worstHealth(now)
		}
		return out
	}
	addrs := make([]string, maxHeartbeatAddrs)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("/ip6/2001:db8:ffff:ffff:ffff:ffff:ffff:%04x/udp/65535/quic-v1/p2p/%s", i, self)
	}
	base := agent.Heartbeat{PeerID: self.String(), Version: strings.Repeat("v", 64), Addrs: addrs, AgentsHosted: len(local), Load: 1.2345678901234567, SentAt: now.UTC()}
	n := New(Config{Store: &hostCache{local: local}})
	r, err := n.buildRound(context.Background(), base, src(), addrs)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := splitHeartbeat(r.base, r.delta)
	if err != nil {
		t.Fatal(err)
	}
	if want := (len(local) + agent.MaxHeartbeatHealth - 1) / agent.MaxHeartbeatHealth; len(parts) != want {
		t.Errorf("%d messages, want %d", len(parts), want)
	}
	topic := TopicStatus
	seen := map[string]int{}
	for i, b := range parts {
		frame := &pb.RPC{Publish: []*pb.Message{{
			From: []byte(self), Data: b, Seqno: make([]byte, 8), Topic: &topic, Signature: make([]byte, 64),
		}}}
		if size := proto.Size(frame); len(b) > maxHeartbeatBytes || size > maxGossipSize {
			t.Errorf("message %d: %d bytes, %d as a pubsub frame; caps %d and %d", i, len(b), size, maxHeartbeatBytes, maxGossipSize)
		}
		t.Logf("message %d: %d bytes, frame %d", i, len(b), proto.Size(frame))
		hb, err := decodeHeartbeat(b, self, now)
		if err != nil {
			t.Fatalf("message %d refused: %v", i, err)
		}
		if hb.AgentsHosted != len(local) {
			t.Errorf("message %d: agents_hosted %d", i, hb.AgentsHosted)
		}
		for _, e := range hb.Health {
			seen[e.ID]++
			if e.LatencyMS != agent.MaxHealthLatencyMS || e.SuccessRate != 0.123 || e.CheckedAt.Location() != time.UTC || e.CheckedAt.Nanosecond() != 0 {
				t.Fatalf("entry not normalised: %+v", e.Health)
			}
		}
	}
	for id := range local {
		if seen[id] != 1 {
			t.Errorf("agent %s in %d messages", id, seen[id])
		}
	}
	if len(seen) != len(local) {
		t.Errorf("%d agents in the messages, want %d", len(seen), len(local))
	}
}

// A heartbeat without health is one message, as before.
func TestHeartbeatWithoutHealthIsOneMessage(t *testing.T) {
	_, self := newKey(t)
	parts, err := splitHeartbeat(agent.Heartbeat{PeerID: self.String(), SentAt: time.Now().UTC()}, nil)
	if err != nil || len(parts) != 1 || strings.Contains(string(parts[0]), "health") {
		t.Fatalf("parts %q, %v", parts, err)
	}
}

// The heartbeat speaks only for agents this node hosts, and only with
// states the network knows.
func TestRoundSpeaksOnlyForLocalAgents(t *testing.T) {
	key, _ := newKey(t)
	otherKey, _ := newKey(t)
	local := hostedAgents(t, key, 3)
	var ids []string
	for id := range local {
		ids = append(ids, id)
	}
	foreign := hostedAgents(t, otherKey, 1)
	src := map[string]agent.Health{
		ids[0]: {State: agent.HealthHealthy, SuccessRate: 1},
		ids[1]: {State: "sleepy"},
		// ids[2]: no summary yet, so no entry.
	}
	for id := range foreign {
		src[id] = agent.Health{State: agent.HealthFailing}
	}
	cache := &hostCache{local: local}
	n := New(Config{Store: cache})
	r, err := n.buildRound(context.Background(), agent.Heartbeat{SentAt: time.Now().UTC(), IntervalMS: 1000}, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.delta; len(got) != 1 || got[0].ID != ids[0] || got[0].Name != local[ids[0]] || got[0].State != agent.HealthHealthy {
		t.Errorf("entries %+v, want only %s healthy", got, ids[0])
	}
	_, _, looked := cache.reads()
	if r, err = n.buildRound(context.Background(), agent.Heartbeat{SentAt: time.Now().UTC(), IntervalMS: 1000}, src, nil); err != nil || len(r.delta) != 0 {
		t.Fatalf("a second round with nothing changed: %v, %v", r.delta, err)
	}
	if _, _, again := cache.reads(); again != looked {
		t.Errorf("the second round looked up %d names again (an agent not hosted here)", again-looked)
	}
	n = New(Config{Store: &hostCache{local: local}})
	if r, err := n.buildRound(context.Background(), agent.Heartbeat{IntervalMS: 1000}, nil, nil); err != nil || r.delta != nil {
		t.Errorf("entries without a source: %v, %v", r.delta, err)
	}
}

// Health entries are checked as strictly as records: every bad one is
// refused with a reason, which the metrics and the peer's strikes count.
func TestDecodeHeartbeatChecksHealth(t *testing.T) {
	key, self := newKey(t)
	otherKey, other := newKey(t)
	now := time.Now()
	local := hostedAgents(t, key, agent.MaxHeartbeatHealth+1)
	var own []agent.HostedHealth
	for id, name := range local {
		own = append(own, agent.HostedHealth{ID: id, Name: name, Health: agent.Health{State: agent.HealthHealthy, SuccessRate: 1, CheckedAt: now}})
	}
	var foreign agent.HostedHealth
	for id, name := range hostedAgents(t, otherKey, 1) {
		foreign = agent.HostedHealth{ID: id, Name: name, Health: agent.Health{State: agent.HealthFailing}}
	}
	with := func(f func(*agent.HostedHealth)) []agent.HostedHealth {
		e := own[0]
		f(&e)
		return []agent.HostedHealth{e}
	}
	for _, c := range []struct {
		name   string
		author peer.ID
		health []agent.HostedHealth
		reason string // "" accepted
	}{
		{"own agents", self, own[:agent.MaxHeartbeatHealth], ""},
		{"no health", self, nil, ""},
		{"too many entries", self, own, "invalid"},
		{"another node's agent", self, []agent.HostedHealth{own[0], foreign}, "key"},
		{"own agent, sent by another node", other, own[:1], "key"},
		{"an id that is not derived from the name", self, with(func(e *agent.HostedHealth) { e.Name = own[1].Name }), "key"},
		{"a bad id", self, with(func(e *agent.HostedHealth) { e.ID = "x" }), "invalid"},
		{"a bad name", self, with(func(e *agent.HostedHealth) { e.Name = "Not A Name" }), "invalid"},
		{"twice the same agent", self, []agent.HostedHealth{own[0], own[0]}, "invalid"},
		{"an unknown state", self, with(func(e *agent.HostedHealth) { e.State = "sleepy" }), "invalid"},
		{"no state", self, with(func(e *agent.HostedHealth) { e.State = "" }), "invalid"},
		{"a success rate above 1", self, with(func(e *agent.HostedHealth) { e.SuccessRate = 1.5 }), "invalid"},
		{"a negative success rate", self, with(func(e *agent.HostedHealth) { e.SuccessRate = -0.1 }), "invalid"},
		{"a negative latency", self, with(func(e *agent.HostedHealth) { e.LatencyMS = -1 }), "invalid"},
		{"a latency over the cap", self, with(func(e *agent.HostedHealth) { e.LatencyMS = agent.MaxHealthLatencyMS + 1 }), "invalid"},
		{"checked in the future", self, with(func(e *agent.HostedHealth) { e.CheckedAt = now.Add(time.Hour) }), "invalid"},
		{"answered in the future", self, with(func(e *agent.HostedHealth) { e.LastOKAt = now.Add(time.Hour) }), "invalid"},
		{"checked just ahead, within the clock skew", self, with(func(e *agent.HostedHealth) { e.CheckedAt = now.Add(time.Minute) }), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := mustJSONBytes(t, agent.Heartbeat{PeerID: c.author.String(), SentAt: now.UTC(), Health: c.health})
			_, err := decodeHeartbeat(b, c.author, now)
			switch {
			case c.reason == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.reason != "" && err == nil:
				t.Errorf("accepted, want refused as %s", c.reason)
			case c.reason != "" && reasonOf(err) != c.reason:
				t.Errorf("refused as %s (%v), want %s", reasonOf(err), err, c.reason)
			}
		})
	}
	big := make([]byte, maxHeartbeatBytes+1)
	if _, err := decodeHeartbeat(big, self, now); !errors.Is(err, agent.ErrTooLarge) {
		t.Errorf("oversized heartbeat: %v, want ErrTooLarge", err)
	}
}

func mustJSONBytes(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
