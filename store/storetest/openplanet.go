package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// openPlanetCases are the bounds on what peers never heard from can make a
// node hold (docs/architecture.md "Peers are adversaries"): no node row
// for a host never heard, its listings stale and soon offline, the nodes read a
// page or a count at a time, agents_hosted capped at what is held, and a
// quota of listings per publisher.
var openPlanetCases = []testCase{
	{"SinkUnheardHostStale", testSinkUnheardHostStale},
	{"ExpireUnheard", testExpireUnheard},
	{"ExpireUnheardBacklog", testExpireUnheardBacklog},
	{"SweepExpiresUnheard", testSweepExpiresUnheard},
	{"NodesPaging", testNodesPaging},
	{"GetAndCountNodes", testGetAndCountNodes},
	{"CountHostedAndPublished", testCountHostedAndPublished},
	{"SinkCapsAgentsHosted", testSinkCapsAgentsHosted},
	{"SinkPublisherQuota", testSinkPublisherQuota},
}

// heartbeat is what p2p hands the Sink for a verified heartbeat of p.
func heartbeat(p *publisher, at time.Time, agents int) agent.Heartbeat {
	return agent.Heartbeat{PeerID: p.peer, Version: "test", Addrs: []string{"/ip4/10.0.0.9/tcp/4001"}, AgentsHosted: agents, SentAt: at}
}

func wantStatus(t *testing.T, s store.Store, what, id, want string) {
	t.Helper()
	if got := mustGet(t, s, id); got.Status != want {
		t.Errorf("%s: status %q, want %q", what, got.Status, want)
	}
}

func nodeCount(t *testing.T, s store.Network) int {
	t.Helper()
	counts, err := s.CountNodes(testContext(t))
	if err != nil {
		t.Fatalf("CountNodes: %v", err)
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}

// testSinkUnheardHostStale: a record of a host that never sent a
// heartbeat makes no node row and enters stale; the host's heartbeat
// makes its row and turns the listing online; a later record of the heard
// host enters online, and this node's own stays online without any row.
func testSinkUnheardHostStale(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	self, host := newPublisher(t), newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return at }}

	rec, env := host.seal(t, at, agent.Record{Name: "never-heard"})
	if _, err := sink.Put(ctx, rec, env); err != nil {
		t.Fatalf("Put: %v", err)
	}
	wantStatus(t, s, "listing of a host never heard", rec.ID, store.StatusStale)
	if n := nodeCount(t, s); n != 0 {
		t.Errorf("a record of a host never heard made %d node rows, want none", n)
	}
	wantNameSet(t, "default search shows the stale listing", mustSearch(t, s, store.SearchQuery{}).Listings, "never-heard")
	wantNameSet(t, "online search", mustSearch(t, s, store.SearchQuery{Statuses: []string{store.StatusOnline}}).Listings)

	if err := sink.NodeSeen(ctx, heartbeat(host, at, 1)); err != nil {
		t.Fatalf("NodeSeen: %v", err)
	}
	wantStatus(t, s, "after its host's heartbeat", rec.ID, store.StatusOnline)
	if n := nodeCount(t, s); n != 1 {
		t.Errorf("after a heartbeat: %d node rows, want 1", n)
	}
	rec2, env2 := host.seal(t, at, agent.Record{Name: "heard-later"})
	if _, err := sink.Put(ctx, rec2, env2); err != nil {
		t.Fatalf("Put: %v", err)
	}
	wantStatus(t, s, "a record of a heard host", rec2.ID, store.StatusOnline)

	own, ownEnv := self.seal(t, at, agent.Record{Name: "own-agent"})
	if _, err := sink.Put(ctx, own, ownEnv); err != nil {
		t.Fatalf("Put: %v", err)
	}
	if got := mustGet(t, s, own.ID); got.Status != store.StatusOnline || !got.Local {
		t.Errorf("this node's own listing: status %q local %v, want online, local", got.Status, got.Local)
	}
	if n := nodeCount(t, s); n != 1 {
		t.Errorf("this node's own record made a node row: %d rows, want 1", n)
	}
}

// testExpireUnheard: only stale listings not hosted here, whose host has
// no node row and whose last_seen is before the cutoff, go offline; the
// read cache serves the change at once. (Searches after a Sweep are
// checked in testSweepExpiresUnheard.)
func testExpireUnheard(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	cutoff := at.Add(-15 * time.Minute)
	old := at.Add(-time.Hour)
	unheard, heard, mine := newPublisher(t), newPublisher(t), newPublisher(t)
	if err := s.UpsertNode(ctx, store.Node{PeerID: heard.peer, LastHeartbeat: old, Status: store.StatusStale}); err != nil {
		t.Fatal(err)
	}
	listing := func(p *publisher, name, status string, seen time.Time) store.Listing {
		l := withStatus(p.listing(t, at, agent.Record{Name: name}), status)
		l.LastSeen = seen
		return l
	}
	gone := listing(unheard, "unheard-old", store.StatusStale, old)
	recent := listing(unheard, "unheard-recent", store.StatusStale, at.Add(-time.Minute))
	online := listing(unheard, "unheard-online", store.StatusOnline, old)
	silent := listing(heard, "heard-silent", store.StatusStale, old)
	local := listing(mine, "local-stale", store.StatusStale, old)
	local.Local = true
	tomb := withStatus(unheard.listing(t, at, agent.Record{Name: "unheard-tomb", Tombstone: true}), store.StatusStale)
	tomb.LastSeen = old
	mustUpsert(t, s, gone, recent, online, silent, local, tomb)

	c := store.NewCache(s, time.Hour, 100)
	if st := mustCachedStats(t, c); st.Agents != 5 {
		t.Fatalf("Stats before: %d agents, want 5", st.Agents)
	}
	n, err := c.ExpireUnheard(ctx, cutoff, mine.peer)
	if err != nil || n != 2 {
		t.Fatalf("ExpireUnheard = %d, %v; want 2 (a listing and a tombstone)", n, err)
	}
	for _, w := range []struct {
		l    store.Listing
		want string
	}{
		{gone, store.StatusOffline},
		{recent, store.StatusStale},
		{online, store.StatusOnline},
		{silent, store.StatusStale},
		{local, store.StatusStale},
		{tomb, store.StatusOffline},
	} {
		wantStatus(t, s, w.l.Record.Name, w.l.Record.ID, w.want)
	}
	if st := mustCachedStats(t, c); st.Agents != 4 {
		t.Errorf("Stats after, through the cache: %d agents, want 4", st.Agents)
	}
	if n, err := s.ExpireUnheard(ctx, cutoff, mine.peer); err != nil || n != 0 {
		t.Errorf("ExpireUnheard again = %d, %v; want 0", n, err)
	}
}

func mustCachedStats(t *testing.T, c *store.Cache) store.Stats {
	t.Helper()
	st, err := c.Stats(testContext(t))
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

// testSweepExpiresUnheard: the sweep takes listings of hosts never heard
// offline once unheardAfter has passed since they were heard of, long
// before they expire; a heard host's listings and this node's are left to
// the other rules.
func testSweepExpiresUnheard(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, rogue, peer := newPublisher(t), newPublisher(t), newPublisher(t)
	clock := t0
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return clock }}
	put := func(p *publisher, name string) *agent.Record {
		t.Helper()
		rec, env := p.seal(t, clock, agent.Record{Name: name, ExpiresAt: t0.Add(24 * time.Hour)})
		if _, err := sink.Put(ctx, rec, env); err != nil {
			t.Fatalf("Put %s: %v", name, err)
		}
		return rec
	}
	spam := put(rogue, "spam-early")
	if err := sink.NodeSeen(ctx, heartbeat(peer, clock, 1)); err != nil {
		t.Fatal(err)
	}
	real := put(peer, "real-agent")
	own := put(self, "own-agent")
	clock = t0.Add(10 * time.Minute)
	late := put(rogue, "spam-late")
	if err := sink.NodeSeen(ctx, heartbeat(peer, clock, 1)); err != nil {
		t.Fatal(err)
	}

	sweep := func(at time.Time) {
		t.Helper()
		if err := store.Sweep(ctx, s, self.peer, at, time.Minute, time.Hour, 15*time.Minute); err != nil {
			t.Fatalf("Sweep: %v", err)
		}
	}
	sweep(t0.Add(14 * time.Minute))
	wantStatus(t, s, "unheard, 14 minutes on", spam.ID, store.StatusStale)
	sweep(t0.Add(16 * time.Minute))
	wantStatus(t, s, "unheard, 16 minutes on", spam.ID, store.StatusOffline)
	wantStatus(t, s, "unheard, heard of 6 minutes before", late.ID, store.StatusStale)
	wantStatus(t, s, "a heard host silent for 6 minutes", real.ID, store.StatusStale)
	wantStatus(t, s, "this node's own", own.ID, store.StatusOnline)
	wantNameSet(t, "default search 16 minutes on", mustSearch(t, s, store.SearchQuery{}).Listings, "spam-late", "own-agent", "real-agent")

	// 0 is the default threshold, DefaultUnheardAfter.
	if err := store.Sweep(ctx, s, self.peer, clock.Add(store.DefaultUnheardAfter+time.Second), time.Minute, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "unheard, past the default threshold", late.ID, store.StatusOffline)
	wantStatus(t, s, "a heard host's, past the default threshold", real.ID, store.StatusStale)
}

// testNodesPaging: ListNodes pages through the nodes in byte order of
// their peer IDs, forwards and back, with no gap or repeat.
func testNodesPaging(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	var ids []string
	for i := range 7 {
		p := newPublisher(t)
		ids = append(ids, p.peer)
		if err := s.UpsertNode(ctx, store.Node{PeerID: p.peer, LastHeartbeat: at.Add(time.Duration(i) * time.Second), Status: store.StatusOnline}); err != nil {
			t.Fatal(err)
		}
	}
	// Both cases of a letter: byte order puts every capital first.
	mixed := []string{"12D3KooWaaaa", "12D3KooWZZZZ"}
	for _, id := range mixed {
		if err := s.UpsertNode(ctx, store.Node{PeerID: id, LastHeartbeat: at, Status: store.StatusStale}); err != nil {
			t.Fatal(err)
		}
	}
	ids = append(ids, mixed...)
	slices.SortFunc(ids, strings.Compare)

	list := func(q store.NodeQuery) store.NodePage {
		t.Helper()
		page, err := s.ListNodes(ctx, q)
		if err != nil {
			t.Fatalf("ListNodes(%+v): %v", q, err)
		}
		return page
	}
	check := func(what string, page store.NodePage, want []string, prev, next string) {
		t.Helper()
		var got []string
		for _, n := range page.Nodes {
			got = append(got, n.PeerID)
		}
		if !slices.Equal(got, want) || page.Prev != prev || page.Next != next {
			t.Errorf("%s: nodes %v prev %q next %q;\nwant %v prev %q next %q", what, got, page.Prev, page.Next, want, prev, next)
		}
	}
	p1 := list(store.NodeQuery{Limit: 4})
	check("first page", p1, ids[0:4], "", ids[3])
	p2 := list(store.NodeQuery{After: p1.Next, Limit: 4})
	check("second page", p2, ids[4:8], ids[4], ids[7])
	p3 := list(store.NodeQuery{After: p2.Next, Limit: 4})
	check("last page", p3, ids[8:], ids[8], "")
	check("back to the second", list(store.NodeQuery{Before: p3.Prev, Limit: 4}), ids[4:8], ids[4], ids[7])
	check("back to the first", list(store.NodeQuery{Before: p2.Prev, Limit: 4}), ids[0:4], "", ids[3])
	check("back from the second row", list(store.NodeQuery{Before: ids[2], Limit: 4}), ids[0:2], "", ids[1])
	check("everything", list(store.NodeQuery{Limit: 100}), ids, "", "")
	check("past the end", list(store.NodeQuery{After: ids[len(ids)-1], Limit: 4}), nil, "", "")

	// A heartbeat moves no row between pages.
	if err := s.UpsertNode(ctx, store.Node{PeerID: ids[5], LastHeartbeat: at.Add(time.Hour), Status: store.StatusOnline}); err != nil {
		t.Fatal(err)
	}
	check("second page after a heartbeat", list(store.NodeQuery{After: p1.Next, Limit: 4}), ids[4:8], ids[4], ids[7])
}

// testGetAndCountNodes: GetNodes returns the rows of the ids that have
// one; CountNodes counts them per status.
func testGetAndCountNodes(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	a, b, c, never := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	if got, err := s.CountNodes(ctx); err != nil || len(got) != 0 {
		t.Fatalf("CountNodes on an empty store = %v, %v; want empty", got, err)
	}
	for _, n := range []store.Node{
		{PeerID: a.peer, Version: "1", AgentsHosted: 2, LastHeartbeat: at, Status: store.StatusOnline},
		{PeerID: b.peer, LastHeartbeat: at, Status: store.StatusOnline},
		{PeerID: c.peer, LastHeartbeat: at, Status: store.StatusOffline},
	} {
		if err := s.UpsertNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.GetNodes(ctx, []string{a.peer, never.peer, c.peer})
	if err != nil {
		t.Fatalf("GetNodes: %v", err)
	}
	var peers []string
	for _, n := range got {
		peers = append(peers, n.PeerID)
		if n.PeerID == a.peer && (n.Version != "1" || n.AgentsHosted != 2 || n.Status != store.StatusOnline) {
			t.Errorf("GetNodes read %+v back", n)
		}
	}
	if want := sorted([]string{a.peer, c.peer}); !slices.Equal(sorted(peers), want) {
		t.Errorf("GetNodes = %v, want %v", sorted(peers), want)
	}
	if got, err := s.GetNodes(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("GetNodes(none) = %v, %v", got, err)
	}
	counts, err := s.CountNodes(ctx)
	if err != nil {
		t.Fatalf("CountNodes: %v", err)
	}
	if len(counts) != 2 || counts[store.StatusOnline] != 2 || counts[store.StatusOffline] != 1 {
		t.Errorf("CountNodes = %v, want online 2, offline 1", counts)
	}
}

// testCountHostedAndPublished: the counts behind the agents_hosted cap
// and the publisher quota, and HasAgent.
func testCountHostedAndPublished(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	pub, host, other := newPublisher(t), newPublisher(t), newPublisher(t)
	hosted := func(name, status string, tomb bool) store.Listing {
		l := withStatus(pub.listing(t, at, hostedBy(host, agent.Record{Name: name, Tombstone: tomb})), status)
		return l
	}
	ls := []store.Listing{
		hosted("on-1", store.StatusOnline, false),
		hosted("on-2", store.StatusOnline, false),
		hosted("stale-1", store.StatusStale, false),
		hosted("off-1", store.StatusOffline, false),
		hosted("tomb-1", store.StatusOnline, true),
		other.listing(t, at, agent.Record{Name: "elsewhere"}),
	}
	mustUpsert(t, s, ls...)
	for _, c := range []struct {
		what  string
		count func(limit int) (int, error)
		limit int
		want  int
	}{
		{"CountHosted", func(l int) (int, error) { return s.CountHosted(ctx, host.peer, l) }, 100, 3},
		{"CountHosted up to 2", func(l int) (int, error) { return s.CountHosted(ctx, host.peer, l) }, 2, 2},
		{"CountHosted up to 0", func(l int) (int, error) { return s.CountHosted(ctx, host.peer, l) }, 0, 0},
		{"CountHosted of a host with none", func(l int) (int, error) { return s.CountHosted(ctx, pub.peer, l) }, 100, 0},
		{"CountPublished", func(l int) (int, error) { return s.CountPublished(ctx, pub.peer, l) }, 100, 4},
		{"CountPublished up to 3", func(l int) (int, error) { return s.CountPublished(ctx, pub.peer, l) }, 3, 3},
		{"CountPublished of another", func(l int) (int, error) { return s.CountPublished(ctx, other.peer, l) }, 100, 1},
		{"CountPublished of a host", func(l int) (int, error) { return s.CountPublished(ctx, host.peer, l) }, 100, 0},
	} {
		if got, err := c.count(c.limit); err != nil || got != c.want {
			t.Errorf("%s = %d, %v; want %d", c.what, got, err, c.want)
		}
	}
	for _, l := range ls {
		if ok, err := s.HasAgent(ctx, l.Record.ID); err != nil || !ok {
			t.Errorf("HasAgent(%s) = %v, %v; want true", l.Record.Name, ok, err)
		}
	}
	if ok, err := s.HasAgent(ctx, "no-such-agent"); err != nil || ok {
		t.Errorf("HasAgent(missing) = %v, %v; want false", ok, err)
	}
}

// testSinkCapsAgentsHosted: the agents_hosted a heartbeat claims is
// stored capped at the listings of that host this node holds.
func testSinkCapsAgentsHosted(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	self, host := newPublisher(t), newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return at }}
	for _, name := range []string{"held-1", "held-2"} {
		rec, env := host.seal(t, at, agent.Record{Name: name})
		if _, err := sink.Put(ctx, rec, env); err != nil {
			t.Fatal(err)
		}
	}
	hosted := func(claim int) int {
		t.Helper()
		if err := sink.NodeSeen(ctx, heartbeat(host, at, claim)); err != nil {
			t.Fatalf("NodeSeen: %v", err)
		}
		got, err := s.GetNodes(ctx, []string{host.peer})
		if err != nil || len(got) != 1 {
			t.Fatalf("GetNodes = %v, %v", got, err)
		}
		return got[0].AgentsHosted
	}
	if got := hosted(1_000_000); got != 2 {
		t.Errorf("a claim of 1,000,000 agents with 2 held: stored %d, want 2", got)
	}
	if got := hosted(1); got != 1 {
		t.Errorf("a claim of 1 agent with 2 held: stored %d, want 1", got)
	}
}

// testSinkPublisherQuota: a publisher other than this node holds at most
// MaxPerPublisher listings that are not offline; updates are never
// refused, this node's own records never counted, and a listing gone
// offline frees its place.
func testSinkPublisherQuota(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	self, pub := newPublisher(t), newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return at }, MaxPerPublisher: 3}
	put := func(p *publisher, name string, seq uint64) (*agent.Record, error) {
		t.Helper()
		rec, env := p.seal(t, at, agent.Record{Name: name, Seq: seq})
		_, err := sink.Put(ctx, rec, env)
		return rec, err
	}
	var first *agent.Record
	for i, name := range []string{"q-1", "q-2", "q-3"} {
		rec, err := put(pub, name, 1)
		if err != nil {
			t.Fatalf("Put %s: %v", name, err)
		}
		if i == 0 {
			first = rec
		}
	}
	over, err := put(pub, "q-4", 1)
	if !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("Put of a 4th listing over a quota of 3 = %v, want ErrOverQuota", err)
	}
	if ok, err := s.HasAgent(ctx, over.ID); err != nil || ok {
		t.Errorf("the refused listing is stored (%v, %v)", ok, err)
	}
	if _, err := put(pub, "q-1", 2); err != nil {
		t.Errorf("an update of a held listing at the quota: %v", err)
	}
	for _, name := range []string{"own-1", "own-2", "own-3", "own-4"} {
		if _, err := put(self, name, 1); err != nil {
			t.Errorf("this node's own listing %s: %v", name, err)
		}
	}
	if _, err := s.SetHostStatus(ctx, pub.peer, store.StatusOffline, at); err != nil {
		t.Fatal(err)
	}
	if got := mustGet(t, s, first.ID); got.Status != store.StatusOffline {
		t.Fatalf("listings did not go offline: %q", got.Status)
	}
	if _, err := put(pub, "q-4", 1); err != nil {
		t.Errorf("a new listing once the others went offline: %v", err)
	}
}

// testExpireUnheardBacklog: a backlog of never-heard listings larger than
// one statement takes (store.ExpireBatch) all goes offline in one call,
// and the count says so.
func testExpireUnheardBacklog(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	old := at.Add(-time.Hour)
	b, ok := s.(store.Batcher)
	if !ok {
		t.Skip("the store runs no transactions (store.Batcher)")
	}
	p := newPublisher(t)
	const n = store.ExpireBatch + 1
	ls := make([]store.Listing, n)
	for i := range ls {
		ls[i] = withStatus(p.listing(t, at, agent.Record{Name: fmt.Sprintf("backlog-%04d", i)}), store.StatusStale)
		ls[i].LastSeen = old
	}
	if err := b.InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
		for _, l := range ls {
			if err := tx.UpsertRecord(ctx, l); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ExpireUnheard(ctx, at.Add(-15*time.Minute), newPublisher(t).peer)
	if err != nil || got != n {
		t.Fatalf("ExpireUnheard = %d, %v; want %d (more than one statement's %d)", got, err, n, store.ExpireBatch)
	}
	wantStatus(t, s, ls[0].Record.Name, ls[0].Record.ID, store.StatusOffline)
	wantStatus(t, s, ls[n-1].Record.Name, ls[n-1].Record.ID, store.StatusOffline)
}
