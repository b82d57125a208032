package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var statusCases = []testCase{
	{"SetHostStatus", testSetHostStatus},
	{"ExpireListings", testExpireListings},
	{"StatsAndCounts", testStatsAndCounts},
	{"ListTags", testListTags},
	{"TagCountsFollowChanges", testTagCountsFollowChanges},
	{"RecentAgents", testRecentAgents},
	{"ListLocal", testListLocal},
}

// hostedBy makes a record whose libp2p endpoint is host's.
func hostedBy(host *publisher, r agent.Record) agent.Record {
	r.Endpoints = []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: host.peer, Protocol: agent.MCPProtocol}}
	return r
}

func testSetHostStatus(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p, h1, h2 := newPublisher(t), newPublisher(t), newPublisher(t)
	a := p.listing(t, at, hostedBy(h1, agent.Record{Name: "h1-a"}))
	b := p.listing(t, at, hostedBy(h1, agent.Record{Name: "h1-b"}))
	off := withStatus(p.listing(t, at, hostedBy(h1, agent.Record{Name: "h1-offline"})), store.StatusOffline)
	other := p.listing(t, at, hostedBy(h2, agent.Record{Name: "h2-a"}))
	mustUpsert(t, s, a, b, off, other)

	n, err := s.SetHostStatus(ctx, h1.peer, store.StatusStale, at.Add(30*time.Second))
	if err != nil || n != 2 {
		t.Fatalf("SetHostStatus(h1, stale) = %d, %v; want 2", n, err)
	}
	for _, c := range []struct {
		l      store.Listing
		status string
	}{{a, store.StatusStale}, {b, store.StatusStale}, {off, store.StatusOffline}, {other, store.StatusOnline}} {
		got := mustGet(t, s, c.l.Record.ID)
		if got.Status != c.status {
			t.Errorf("after stale: %s is %q, want %q", c.l.Record.Name, got.Status, c.status)
		}
		wantTime(t, "after stale: LastSeen of "+c.l.Record.Name, got.LastSeen, at)
	}
	wantNames(t, "default search after stale", mustSearch(t, s, store.SearchQuery{}).Listings, "h2-a", "h1-b", "h1-a")

	seen := at.Add(time.Minute)
	n, err = s.SetHostStatus(ctx, h1.peer, store.StatusOnline, seen)
	if err != nil || n != 2 {
		t.Fatalf("SetHostStatus(h1, online) = %d, %v; want 2", n, err)
	}
	for _, l := range []store.Listing{a, b} {
		got := mustGet(t, s, l.Record.ID)
		if got.Status != store.StatusOnline {
			t.Errorf("after online: %s is %q", l.Record.Name, got.Status)
		}
		wantTime(t, "after online: LastSeen of "+l.Record.Name, got.LastSeen, seen)
	}
	if got := mustGet(t, s, off.Record.ID); got.Status != store.StatusOffline {
		t.Errorf("a heartbeat revived an offline listing: %q", got.Status)
	}
	if n, err := s.SetHostStatus(ctx, newPublisher(t).peer, store.StatusStale, seen); err != nil || n != 0 {
		t.Errorf("SetHostStatus(unknown host) = %d, %v; want 0", n, err)
	}
}

func testExpireListings(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	soon := p.listing(t, at, agent.Record{Name: "expires-soon", ExpiresAt: at.Add(time.Hour)})
	later := withStatus(p.listing(t, at, agent.Record{Name: "expires-later", ExpiresAt: at.Add(2 * time.Hour)}), store.StatusStale)
	gone := withStatus(p.listing(t, at, agent.Record{Name: "already-offline", ExpiresAt: at.Add(time.Hour)}), store.StatusOffline)
	mustUpsert(t, s, soon, later, gone)

	for _, c := range []struct {
		now  time.Time
		want int
	}{{at, 0}, {at.Add(time.Hour - time.Microsecond), 0}, {at.Add(90 * time.Minute), 1}, {at.Add(90 * time.Minute), 0}, {at.Add(2 * time.Hour), 1}} {
		n, err := s.ExpireListings(ctx, c.now)
		if err != nil || n != c.want {
			t.Errorf("ExpireListings(+%v) = %d, %v; want %d", c.now.Sub(at), n, err, c.want)
		}
	}
	for _, l := range []store.Listing{soon, later, gone} {
		if got := mustGet(t, s, l.Record.ID); got.Status != store.StatusOffline {
			t.Errorf("%s is %q after expiry, want offline", l.Record.Name, got.Status)
		}
	}
	wantNames(t, "default search after expiry", mustSearch(t, s, store.SearchQuery{}).Listings)
}

// statsFixture: online [a b], stale [b c], offline [d], tombstoned [e],
// two nodes (one offline).
func statsFixture(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "stats-online", Tags: []string{"a", "b"}}),
		withStatus(p.listing(t, at, agent.Record{Name: "stats-stale", Tags: []string{"b", "c"}}), store.StatusStale),
		withStatus(p.listing(t, at, agent.Record{Name: "stats-offline", Tags: []string{"d"}}), store.StatusOffline),
		p.listing(t, at, agent.Record{Name: "stats-tomb", Tags: []string{"e"}, Seq: 1}),
		p.listing(t, at, agent.Record{Name: "stats-tomb", Tags: []string{"e"}, Seq: 2, Tombstone: true}),
	)
	for _, n := range []store.Node{
		{PeerID: newPublisher(t).peer, Version: "0.1.0", LastHeartbeat: at, Status: store.StatusOnline},
		{PeerID: newPublisher(t).peer, Version: "0.1.0", LastHeartbeat: at.Add(-time.Hour), Status: store.StatusOffline},
	} {
		if err := s.UpsertNode(ctx, n); err != nil {
			t.Fatalf("UpsertNode: %v", err)
		}
	}
}

func testStatsAndCounts(t *testing.T, s store.Store) {
	ctx := testContext(t)
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats on an empty store: %v", err)
	}
	if st != (store.Stats{}) {
		t.Errorf("Stats on an empty store = %+v, want zeros", st)
	}
	statsFixture(t, s)
	st, err = s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	// Nodes counts every node heard of, whatever its status.
	if want := (store.Stats{Agents: 2, OnlineAgents: 1, Tags: 3, Nodes: 2}); st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	counts, err := s.CountByStatus(ctx)
	if err != nil {
		t.Fatalf("CountByStatus: %v", err)
	}
	for status, want := range map[string]int{store.StatusOnline: 1, store.StatusStale: 1, store.StatusOffline: 1} {
		if counts[status] != want {
			t.Errorf("CountByStatus = %v, want %s: %d", counts, status, want)
		}
	}
	if len(counts) > 3 {
		t.Errorf("CountByStatus = %v, want only the three statuses", counts)
	}
}

func tagCount(tag string, n int) store.TagCount { return store.TagCount{Tag: tag, Count: n} }

func testListTags(t *testing.T, s store.Store) {
	ctx := testContext(t)
	tags, err := s.ListTags(ctx, 10)
	if err != nil || len(tags) != 0 {
		t.Fatalf("ListTags on an empty store = %v, %v; want none", tags, err)
	}
	statsFixture(t, s)
	for _, c := range []struct {
		limit int
		want  []store.TagCount
	}{
		{10, []store.TagCount{tagCount("b", 2), tagCount("a", 1), tagCount("c", 1)}},
		{2, []store.TagCount{tagCount("b", 2), tagCount("a", 1)}},
		{0, []store.TagCount{tagCount("b", 2), tagCount("a", 1), tagCount("c", 1)}},
	} {
		tags, err := s.ListTags(ctx, c.limit)
		if err != nil {
			t.Fatalf("ListTags(%d): %v", c.limit, err)
		}
		if len(tags) != len(c.want) {
			t.Errorf("ListTags(%d) = %v, want %v", c.limit, tags, c.want)
			continue
		}
		for i := range tags {
			if tags[i] != c.want[i] {
				t.Errorf("ListTags(%d) = %v, want %v (most used first, then by name)", c.limit, tags, c.want)
				break
			}
		}
	}
}

func testRecentAgents(t *testing.T, s store.Store) {
	ctx := testContext(t)
	statsFixture(t, s)
	at := now()
	mustUpsert(t, s, newPublisher(t).listing(t, at, agent.Record{Name: "stats-newest"}))
	for _, c := range []struct {
		limit int
		want  []string
	}{{10, []string{"stats-newest", "stats-stale", "stats-online"}}, {1, []string{"stats-newest"}}, {0, []string{"stats-newest", "stats-stale", "stats-online"}}} {
		got, err := s.RecentAgents(ctx, c.limit)
		if err != nil {
			t.Fatalf("RecentAgents(%d): %v", c.limit, err)
		}
		wantNames(t, "RecentAgents", got, c.want...)
	}
}

func testListLocal(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	local := func(l store.Listing) store.Listing { l.Local = true; return l }
	mustUpsert(t, s,
		local(p.listing(t, at, agent.Record{Name: "local-online"})),
		p.listing(t, at, agent.Record{Name: "remote"}),
		local(withStatus(p.listing(t, at, agent.Record{Name: "local-offline"}), store.StatusOffline)),
		local(p.listing(t, at, agent.Record{Name: "local-tomb", Seq: 1})),
		local(p.listing(t, at, agent.Record{Name: "local-tomb", Seq: 2, Tombstone: true})),
	)
	got, err := s.ListLocal(ctx)
	if err != nil {
		t.Fatalf("ListLocal: %v", err)
	}
	wantNameSet(t, "ListLocal", got, "local-online", "local-offline")
	for _, l := range got {
		if !l.Local {
			t.Errorf("ListLocal returned %s with Local false", l.Record.Name)
		}
	}
}

// wantTags checks ListTags (as "tag:n" in order), and that Stats and
// CountByStatus agree with ListTags and with searches.
func wantTags(t *testing.T, s store.Store, when, want string) {
	t.Helper()
	ctx := testContext(t)
	tags, err := s.ListTags(ctx, store.MaxLimit)
	if err != nil {
		t.Fatalf("ListTags: %v", err)
	}
	got := ""
	for i, tc := range tags {
		if i > 0 {
			got += " "
		}
		got += fmt.Sprintf("%s:%d", tc.Tag, tc.Count)
	}
	if got != want {
		t.Errorf("%s: ListTags = %q, want %q", when, got, want)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.Tags != len(tags) {
		t.Errorf("%s: Stats.Tags = %d, ListTags has %d", when, st.Tags, len(tags))
	}
	// The counters agree with a search per status.
	counts, err := s.CountByStatus(ctx)
	if err != nil {
		t.Fatalf("CountByStatus: %v", err)
	}
	found := map[string]int{}
	for _, status := range []string{store.StatusOnline, store.StatusStale, store.StatusOffline} {
		found[status] = len(mustSearch(t, s, store.SearchQuery{Statuses: []string{status}, Limit: store.MaxLimit}).Listings)
		if counts[status] != found[status] {
			t.Errorf("%s: CountByStatus[%s] = %d, search finds %d", when, status, counts[status], found[status])
		}
	}
	if st.Agents != found[store.StatusOnline]+found[store.StatusStale] || st.OnlineAgents != found[store.StatusOnline] {
		t.Errorf("%s: Stats = %+v, search finds %v", when, st, found)
	}
}

// testTagCountsFollowChanges moves listings through every visibility change
// and checks the tag counts after each.
func testTagCountsFollowChanges(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p, h1, h2 := newPublisher(t), newPublisher(t), newPublisher(t)
	l1 := p.listing(t, at, hostedBy(h1, agent.Record{Name: "tc-one", Tags: []string{"a", "b"}, Seq: 1, ExpiresAt: at.Add(3 * time.Hour)}))
	l2 := p.listing(t, at, hostedBy(h1, agent.Record{Name: "tc-two", Tags: []string{"b"}, Seq: 1, ExpiresAt: at.Add(3 * time.Hour)}))
	l3 := withStatus(p.listing(t, at, hostedBy(h2, agent.Record{Name: "tc-three", Tags: []string{"c"}, Seq: 1})), store.StatusStale)
	mustUpsert(t, s, l1, l2, l3)
	wantTags(t, s, "start", "b:2 a:1 c:1")

	if _, err := s.SetHostStatus(ctx, h1.peer, store.StatusStale, at); err != nil {
		t.Fatal(err)
	}
	wantTags(t, s, "host stale", "b:2 a:1 c:1")

	if n, err := s.ExpireListings(ctx, at.Add(90*time.Minute)); err != nil || n != 1 {
		t.Fatalf("ExpireListings = %d, %v; want 1", n, err)
	}
	wantTags(t, s, "tc-three expired", "b:2 a:1")

	mustUpsert(t, s, p.listing(t, at, hostedBy(h1, agent.Record{Name: "tc-one", Tags: []string{"a", "d"}, Seq: 2, ExpiresAt: at.Add(3 * time.Hour)})))
	wantTags(t, s, "tc-one retagged", "a:1 b:1 d:1")

	stale := p.listing(t, at, hostedBy(h1, agent.Record{Name: "tc-one", Tags: []string{"x", "y"}, Seq: 1}))
	if err := s.UpsertRecord(ctx, stale); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale upsert = %v", err)
	}
	wantTags(t, s, "stale upsert", "a:1 b:1 d:1")

	mustUpsert(t, s, p.listing(t, at, hostedBy(h1, agent.Record{Name: "tc-two", Tags: []string{"b"}, Seq: 2, Tombstone: true})))
	wantTags(t, s, "tc-two tombstoned", "a:1 d:1")

	mustUpsert(t, s, p.listing(t, at, hostedBy(h2, agent.Record{Name: "tc-three", Tags: []string{"c", "a"}, Seq: 2})))
	wantTags(t, s, "tc-three re-published", "a:2 c:1 d:1")

	mustUpsert(t, s, withStatus(p.listing(t, at, hostedBy(h2, agent.Record{Name: "tc-three", Tags: []string{"c"}, Seq: 3})), store.StatusOffline))
	wantTags(t, s, "tc-three re-published offline", "a:1 d:1")

	if _, err := s.SetHostStatus(ctx, h1.peer, store.StatusOffline, at); err != nil {
		t.Fatalf("SetHostStatus(h1, offline): %v", err)
	}
	wantTags(t, s, "h1 offline", "")

	mustUpsert(t, s, p.listing(t, at, hostedBy(h1, agent.Record{Name: "tc-one", Tags: []string{"d"}, Seq: 3})))
	wantTags(t, s, "tc-one back online", "d:1")
}
