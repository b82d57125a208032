package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var recordCases = []testCase{
	{"UpsertAndGetAllFields", testUpsertAndGet},
	{"UpsertEmptyLists", testUpsertEmptyLists},
	{"GetAgentNotFound", testGetAgentNotFound},
	{"SeqRule", testSeqRule},
	{"UpdateKeepsFirstSeenOrder", testUpdateKeepsOrder},
	{"Tombstone", testTombstone},
	{"TombstoneKeepsOwner", testTombstoneKeepsOwner},
	{"Sink", testSink},
}

func testUpsertAndGet(t *testing.T, s store.Store) {
	at := now()
	p, host := newPublisher(t), newPublisher(t)
	l := p.listing(t, at, agent.Record{
		Name:        "weather-bot",
		DisplayName: "Weather Bot",
		Description: "Forecasts for any city.\nAsk it about rain.",
		Tags:        []string{"weather", "forecast"},
		Skills: []agent.Skill{
			{ID: "forecast", Name: "Forecast", Description: "Five-day forecast", Examples: []string{"Rain in Paris?", "Sun in Rome?"}},
			{ID: "alerts", Name: "Alerts"},
		},
		Version: "1.2.3",
		Owner:   "alice",
		Endpoints: []agent.Endpoint{
			{Kind: agent.EndpointLibp2pMCP, PeerID: host.peer, Protocol: agent.MCPProtocol},
			{Kind: agent.EndpointHTTPMCP, URL: "https://weather.example.org/mcp"},
			{Kind: agent.EndpointA2ACard, URL: "https://weather.example.org/.well-known/agent-card.json"},
		},
		Seq:       7,
		IssuedAt:  at.Add(-2 * time.Minute),
		ExpiresAt: at.Add(45 * time.Minute),
	})
	l.Status = store.StatusStale
	l.LastSeen = at.Add(-5 * time.Second)
	l.Local = true
	if l.HostPeerID != host.peer {
		t.Fatalf("fixture: host %s, want the endpoint's peer %s", l.HostPeerID, host.peer)
	}
	mustUpsert(t, s, l)
	wantListing(t, mustGet(t, s, l.Record.ID), l)
}

func testUpsertEmptyLists(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	l := p.listing(t, at, agent.Record{Name: "bare", Description: ""})
	mustUpsert(t, s, l)
	wantListing(t, mustGet(t, s, l.Record.ID), l)
	l2 := p.listing(t, at, agent.Record{Name: "empty-lists", Tags: []string{}, Skills: []agent.Skill{}})
	mustUpsert(t, s, l2)
	wantListing(t, mustGet(t, s, l2.Record.ID), l2)
}

func testGetAgentNotFound(t *testing.T, s store.Store) {
	_, err := s.GetAgent(testContext(t), "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAgent(unknown) = %v, want ErrNotFound", err)
	}
}

func testSeqRule(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	v5 := p.listing(t, at, agent.Record{Name: "seq-agent", Description: "alpha original", Tags: []string{"oldtag"}, Seq: 5})
	mustUpsert(t, s, v5)

	for _, c := range []struct {
		what string
		seq  uint64
	}{{"equal seq", 5}, {"lower seq", 4}, {"much lower seq", 1}} {
		stale := p.listing(t, at, agent.Record{Name: "seq-agent", Description: "beta intruder", Tags: []string{"staletag"}, Seq: c.seq})
		stale.Status = store.StatusStale
		if err := s.UpsertRecord(ctx, stale); !errors.Is(err, store.ErrStale) {
			t.Errorf("%s: UpsertRecord = %v, want ErrStale", c.what, err)
		}
		wantListing(t, mustGet(t, s, v5.Record.ID), v5)
	}
	wantNames(t, "search for the stale text", mustSearch(t, s, store.SearchQuery{Q: "beta"}).Listings)
	wantNames(t, "search for the stale tag", mustSearch(t, s, store.SearchQuery{Tags: []string{"staletag"}}).Listings)

	v6 := p.listing(t, at, agent.Record{Name: "seq-agent", Description: "gamma replaced", Tags: []string{"newtag"}, Seq: 6})
	v6.Status = store.StatusStale
	mustUpsert(t, s, v6)
	wantListing(t, mustGet(t, s, v6.Record.ID), v6)

	wantNames(t, "search old text", mustSearch(t, s, store.SearchQuery{Q: "alpha"}).Listings)
	wantNames(t, "search new text", mustSearch(t, s, store.SearchQuery{Q: "gamma"}).Listings, "seq-agent")
	wantNames(t, "search old tag", mustSearch(t, s, store.SearchQuery{Tags: []string{"oldtag"}}).Listings)
	wantNames(t, "search new tag", mustSearch(t, s, store.SearchQuery{Tags: []string{"newtag"}}).Listings, "seq-agent")
	tags, err := s.ListTags(ctx, 10)
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	if len(tags) != 1 || tags[0] != (store.TagCount{Tag: "newtag", Count: 1}) {
		t.Errorf("ListTags = %+v, want only newtag:1", tags)
	}
}

func testUpdateKeepsOrder(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	a1 := p.listing(t, at, agent.Record{Name: "first-seen", Seq: 1})
	b := p.listing(t, at, agent.Record{Name: "second-seen", Seq: 1})
	mustUpsert(t, s, a1, b)
	a2 := p.listing(t, at, agent.Record{Name: "first-seen", Description: "updated later", Seq: 2})
	mustUpsert(t, s, a2)
	recent, err := s.RecentAgents(testContext(t), 10)
	if err != nil {
		t.Fatalf("RecentAgents: %v", err)
	}
	wantNames(t, "RecentAgents after updating the older listing", recent, "second-seen", "first-seen")
	wantNames(t, "search without text", mustSearch(t, s, store.SearchQuery{}).Listings, "second-seen", "first-seen")
}

// testTombstoneKeepsOwner pins what the name reservation of the portal
// rests on (handlers.saveAgent): a local tombstone, with its owner, is never
// swept, even long after it expired and went offline.
func testTombstoneKeepsOwner(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	live := p.listing(t, at, agent.Record{Name: "reserved-bot", Owner: "alice", Seq: 1})
	live.Local = true
	tomb := p.listing(t, at, agent.Record{Name: "reserved-bot", Owner: "alice", Seq: 2, Tombstone: true})
	tomb.Local = true
	mustUpsert(t, s, live, tomb)

	later := at.Add(30 * 24 * time.Hour)
	if err := store.Sweep(ctx, s, p.peer, later, time.Minute, time.Hour, 0); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	got := mustGet(t, s, tomb.Record.ID)
	if !got.Record.Tombstone || got.Record.Owner != "alice" || got.Record.Seq != 2 || !got.Local {
		t.Errorf("a month after the delete, GetAgent = tombstone %v owner %q seq %d local %v; want the tombstone of alice, seq 2, local",
			got.Record.Tombstone, got.Record.Owner, got.Record.Seq, got.Local)
	}
}

func testTombstone(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	live := p.listing(t, at, agent.Record{Name: "zebra-bot", Description: "zebra stripes", Tags: []string{"tombtag"}, Seq: 1})
	live.Local = true
	other := p.listing(t, at, agent.Record{Name: "other-bot", Tags: []string{"keep"}, Seq: 1})
	mustUpsert(t, s, live, other)

	tomb := p.listing(t, at, agent.Record{Name: "zebra-bot", Description: "zebra stripes", Tags: []string{"tombtag"}, Seq: 2, Tombstone: true})
	tomb.Local = true
	mustUpsert(t, s, tomb)

	got := mustGet(t, s, tomb.Record.ID)
	if !got.Record.Tombstone || got.Record.Seq != 2 {
		t.Fatalf("GetAgent(tombstoned) = tombstone %v seq %d, want true 2", got.Record.Tombstone, got.Record.Seq)
	}
	wantListing(t, got, tomb)

	hidden := func(when string) {
		t.Helper()
		wantNames(t, when+": search text", mustSearch(t, s, store.SearchQuery{Q: "zebra"}).Listings)
		wantNames(t, when+": search tag", mustSearch(t, s, store.SearchQuery{Tags: []string{"tombtag"}}).Listings)
		wantNames(t, when+": search all statuses", mustSearch(t, s, store.SearchQuery{
			Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline}}).Listings, "other-bot")
		recent, err := s.RecentAgents(ctx, 10)
		if err != nil {
			t.Fatalf("RecentAgents: %v", err)
		}
		wantNames(t, when+": RecentAgents", recent, "other-bot")
		local, err := s.ListLocal(ctx)
		if err != nil {
			t.Fatalf("ListLocal: %v", err)
		}
		wantNames(t, when+": ListLocal", local)
		tags, err := s.ListTags(ctx, 10)
		if err != nil {
			t.Fatalf("ListTags: %v", err)
		}
		if len(tags) != 1 || tags[0].Tag != "keep" {
			t.Errorf("%s: ListTags = %+v, want only keep", when, tags)
		}
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatalf("Stats: %v", err)
		}
		if st.Agents != 1 || st.OnlineAgents != 1 || st.Tags != 1 {
			t.Errorf("%s: Stats = %+v, want 1 agent, 1 online, 1 tag", when, st)
		}
		counts, err := s.CountByStatus(ctx)
		if err != nil {
			t.Fatalf("CountByStatus: %v", err)
		}
		if counts[store.StatusOnline] != 1 {
			t.Errorf("%s: CountByStatus = %v, want online 1", when, counts)
		}
	}
	hidden("after the tombstone")

	// Older and equal seqs cannot resurrect it.
	for _, seq := range []uint64{1, 2} {
		old := p.listing(t, at, agent.Record{Name: "zebra-bot", Description: "zebra stripes", Tags: []string{"tombtag"}, Seq: seq})
		if err := s.UpsertRecord(ctx, old); !errors.Is(err, store.ErrStale) {
			t.Errorf("resurrect with seq %d: UpsertRecord = %v, want ErrStale", seq, err)
		}
	}
	if got := mustGet(t, s, tomb.Record.ID); !got.Record.Tombstone {
		t.Errorf("an older seq resurrected the tombstone")
	}
	hidden("after stale resurrection attempts")

	// A newer seq from the publisher brings it back.
	back := p.listing(t, at, agent.Record{Name: "zebra-bot", Description: "zebra stripes", Tags: []string{"tombtag"}, Seq: 3})
	mustUpsert(t, s, back)
	wantNames(t, "search text after re-publishing", mustSearch(t, s, store.SearchQuery{Q: "zebra"}).Listings, "zebra-bot")
	wantNames(t, "search tag after re-publishing", mustSearch(t, s, store.SearchQuery{Tags: []string{"tombtag"}}).Listings, "zebra-bot")
}

func testSink(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: p.peer, Now: func() time.Time { return at }}
	rec, env := p.seal(t, at, agent.Record{Name: "sunk", Tags: []string{"sink"}, Seq: 3})
	if changed, err := sink.Put(ctx, rec, env); err != nil || !changed {
		t.Fatalf("Sink.Put = %v, %v; want changed", changed, err)
	}
	got := mustGet(t, s, rec.ID)
	wantListing(t, got, store.Listing{Record: *rec, Envelope: env, Status: store.StatusOnline,
		LastSeen: at, HostPeerID: p.peer, Local: true, UpdatedAt: at})
	if changed, err := sink.Put(ctx, rec, env); err != nil || changed {
		t.Errorf("Sink.Put of the same record again = %v, %v; want unchanged, no error", changed, err)
	}

	// A record past its expiry when heard of is stored offline.
	other := newPublisher(t)
	rec2, env2 := other.seal(t, at, agent.Record{Name: "late", Seq: 1})
	late := &store.Sink{Store: s, SelfID: p.peer, Now: func() time.Time { return rec2.ExpiresAt }}
	if _, err := late.Put(ctx, rec2, env2); err != nil {
		t.Fatalf("Sink.Put: %v", err)
	}
	if got := mustGet(t, s, rec2.ID); got.Status != store.StatusOffline || got.Local {
		t.Errorf("expired record: status %q local %v, want offline, not local", got.Status, got.Local)
	}
}
