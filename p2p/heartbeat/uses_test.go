package heartbeat

import (
	"context"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// The week's conversations of an agent (Health.Uses7d) ride in its entry
// of the signed heartbeat: a round sends them when they change (they are
// part of the entry's hash, so of the digest), not when they stay, and a
// receiver reads them back for the store; a count out of bounds is
// refused.
func TestHeartbeatCarriesUses(t *testing.T) {
	key, self := newKey(t)
	local := hostedAgents(t, key, 1)
	var id string
	for id = range local {
	}
	now := time.Now().UTC()
	h := agent.Health{State: agent.HealthHealthy, SuccessRate: 1, CheckedAt: now}
	n := New(Config{Store: &hostCache{local: local}})
	round := func(uses int) heartbeatRound {
		t.Helper()
		hh := h
		hh.Uses7d = uses
		r, err := n.buildRound(context.Background(), agent.Heartbeat{PeerID: self.String(), SentAt: now, IntervalMS: 1000}, map[string]agent.Health{id: hh}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	received := func(r heartbeatRound) agent.Health {
		t.Helper()
		msgs, err := r.messages()
		if err != nil || len(msgs) == 0 {
			t.Fatalf("messages: %d, %v", len(msgs), err)
		}
		hb, err := decodeHeartbeat(msgs[0], self, now)
		if err != nil {
			t.Fatalf("the receiver refused the round: %v", err)
		}
		return healthByID(hb.Health)[id]
	}
	if got := received(round(12)); got.Uses7d != 12 {
		t.Errorf("first round: uses %d, want 12", got.Uses7d)
	}
	if r := round(12); len(r.delta) != 0 {
		t.Errorf("unchanged uses sent again: %+v", r.delta)
	}
	digest := n.hb.digest
	if got := received(round(13)); got.Uses7d != 13 {
		t.Errorf("after a change: uses %d, want 13", got.Uses7d)
	}
	if n.hb.digest == digest {
		t.Errorf("the digest did not change with the uses")
	}
	if got := received(round(agent.MaxUses7d + 99)); got.Uses7d != agent.MaxUses7d {
		t.Errorf("a count over the bound: sent %d, want it cut to %d", got.Uses7d, agent.MaxUses7d)
	}
	// An entry without uses hashes as before the field existed.
	e := agent.HostedHealth{ID: id, Name: local[id], Health: h}
	with := e
	with.Uses7d = 1
	if agent.EntryHash(e) == agent.EntryHash(with) {
		t.Errorf("uses do not change the entry's hash")
	}
	for _, bad := range []int{-1, agent.MaxUses7d + 1} {
		e := agent.HostedHealth{ID: id, Name: local[id], Health: h}
		e.Uses7d = bad
		b := mustJSONBytes(t, agent.Heartbeat{PeerID: self.String(), SentAt: now, Health: []agent.HostedHealth{e}})
		if _, err := decodeHeartbeat(b, self, now); err == nil || reasonOf(err) != "invalid" {
			t.Errorf("uses %d: %v, want refused as invalid", bad, err)
		}
	}
}
