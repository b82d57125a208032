package storetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// syncOwnCases hold the engines to what own pages (p2p/catalogsync's own.go)
// read of the hosted listings: Sink.OwnEnvelopes over the engine, and
// over the read cache as a node composes it.
var syncOwnCases = []testCase{
	{"OwnEnvelopes", func(t *testing.T, s store.Store) { testOwnEnvelopes(t, s, s) }},
	{"OwnEnvelopesThroughCache", func(t *testing.T, s store.Store) {
		testOwnEnvelopes(t, s, store.NewCache(s, time.Hour, 100))
	}},
}

// testOwnEnvelopes: pages of 2 bring the envelope of every hosted listing
// valid now, once each, in id order across pages; neither a remote
// listing, a hosted tombstone nor a hosted listing expired (local-000,
// local-001, the replica's) is served, and the last page says so.
func testOwnEnvelopes(t *testing.T, s store.Store, n store.Network) {
	ctx := testContext(t)
	at := now()
	p, other := newPublisher(t), newPublisher(t)
	ls := localFixture(t, s, p, other, 7, at)
	clock := at.Add(2*time.Minute + 30*time.Second)
	sink := &store.Sink{Store: n, SelfID: p.peer, Now: func() time.Time { return clock }}
	want := map[string][]byte{}
	for _, l := range ls {
		if l.Record.ExpiresAt.After(clock) {
			want[l.Record.ID] = l.Envelope
		}
	}
	got := map[string]bool{}
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("OwnEnvelopes does not end")
		}
		envs, next, err := sink.OwnEnvelopes(ctx, after, 2)
		if err != nil {
			t.Fatalf("OwnEnvelopes: %v", err)
		}
		if len(envs) > 2 {
			t.Fatalf("a page of %d envelopes, limit 2", len(envs))
		}
		for _, env := range envs {
			id := ""
			for wid, wenv := range want {
				if bytes.Equal(env, wenv) {
					id = wid
				}
			}
			if id == "" {
				t.Fatalf("an envelope served that is not a hosted listing valid now")
			}
			if got[id] {
				t.Fatalf("listing %s served twice", id)
			}
			if after != "" && id <= after {
				t.Fatalf("listing %s served on a page after %s", id, after)
			}
			got[id] = true
		}
		if next == "" {
			break
		}
		if next <= after {
			t.Fatalf("next %q does not move past %q", next, after)
		}
		after = next
	}
	if len(got) != len(want) {
		t.Fatalf("served %d of the %d hosted listings valid now", len(got), len(want))
	}
	if len(want) != 5 {
		t.Fatalf("fixture: %d hosted listings valid now, want 5", len(want))
	}
}
