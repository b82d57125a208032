package storetest

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

var changeCases = []testCase{
	{"ChangesNumberInserts", testChangesNumberInserts},
	{"ChangesNumberRecordUpdates", testChangesNumberRecordUpdates},
	{"ChangesNumberStatusAndHealth", testChangesNumberStatusAndHealth},
	{"ChangesTombstoneAndExpiry", testChangesTombstoneAndExpiry},
	{"ChangesAlso", testChangesAlso},
	{"ChangesInBatch", testChangesInBatch},
	{"ListingsAt", testListingsAt},
}

// changeFeed is the engine of s as a store.ChangeFeed; every engine must
// be one. A store.Composed (the suite run through the read cache) is read
// through its engine, its Conn, as the feed's reader does: the feed is of
// the database, whichever writer wrote it.
func changeFeed(t *testing.T, s store.Store) store.ChangeFeed {
	t.Helper()
	var engine any = s
	if c, ok := s.(store.Composed); ok {
		engine = c.Conn
	}
	f, ok := engine.(store.ChangeFeed)
	if !ok {
		t.Fatalf("%T is not a store.ChangeFeed", engine)
	}
	return f
}

func mustChanges(t testing.TB, f store.ChangeFeed, after int64, also []int64, limit int) []store.IndexDoc {
	t.Helper()
	docs, err := f.ListingChanges(testContext(t), after, also, limit)
	if err != nil {
		t.Fatalf("ListingChanges(after %d, also %v, limit %d): %v", after, also, limit, err)
	}
	return docs
}

// docNames lists the names of docs, in order.
func docNames(docs []store.IndexDoc) []string {
	out := make([]string, len(docs))
	for i, d := range docs {
		out[i] = d.Name
	}
	return out
}

// lastChange is the largest change number the engine shows, 0 if none.
func lastChange(t testing.TB, f store.ChangeFeed) int64 {
	t.Helper()
	var last int64
	for after := int64(0); ; {
		docs := mustChanges(t, f, after, nil, store.MaxChanges)
		if len(docs) == 0 {
			return last
		}
		last = docs[len(docs)-1].ChangeSeq
		after = last
	}
}

// wantChanged checks that the listings changed after after are exactly
// names (in change number order), each with a number above after, and
// returns them.
func wantChanged(t testing.TB, f store.ChangeFeed, what string, after int64, names ...string) []store.IndexDoc {
	t.Helper()
	docs := mustChanges(t, f, after, nil, store.MaxChanges)
	if got := docNames(docs); !slices.Equal(got, names) {
		t.Errorf("%s: listings changed after %d = %q, want %q", what, after, got, names)
	}
	wantIncreasing(t, what, after, docs)
	return docs
}

// wantChangedSet is wantChanged for listings changed by one statement,
// whose order among themselves is the engine's.
func wantChangedSet(t testing.TB, f store.ChangeFeed, what string, after int64, names ...string) []store.IndexDoc {
	t.Helper()
	docs := mustChanges(t, f, after, nil, store.MaxChanges)
	if got := sorted(docNames(docs)); !slices.Equal(got, sorted(names)) {
		t.Errorf("%s: listings changed after %d = %q, want (any order) %q", what, after, got, sorted(names))
	}
	wantIncreasing(t, what, after, docs)
	return docs
}

// wantIncreasing checks docs' numbers are above after and increasing.
func wantIncreasing(t testing.TB, what string, after int64, docs []store.IndexDoc) {
	t.Helper()
	for i, d := range docs {
		if d.ChangeSeq <= after || (i > 0 && d.ChangeSeq <= docs[i-1].ChangeSeq) {
			t.Errorf("%s: change numbers %v after %d: not increasing", what, changeSeqs(docs), after)
			break
		}
	}
}

func changeSeqs(docs []store.IndexDoc) []int64 {
	out := make([]int64, len(docs))
	for i, d := range docs {
		out[i] = d.ChangeSeq
	}
	return out
}

// wantDoc checks every field of d against the listing l as stored (its
// status and health as given).
func wantDoc(t testing.TB, d store.IndexDoc, l store.Listing, health string) {
	t.Helper()
	r := l.Record
	want := store.IndexDoc{
		Pos: d.Pos, ChangeSeq: d.ChangeSeq,
		Tombstone: r.Tombstone, Status: l.Status, Health: health, Owner: r.Owner, Tags: r.Tags,
		Name: r.Name, DisplayName: r.DisplayName, Description: r.Description, SkillsText: store.SkillsText(r.Skills),
	}
	if len(want.Tags) == 0 {
		want.Tags = nil
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("IndexDoc of %s:\n got %+v\nwant %+v", r.Name, d, want)
	}
	if d.Pos <= 0 {
		t.Errorf("IndexDoc of %s: pos %d", r.Name, d.Pos)
	}
}

// testChangesNumberInserts: every insert gets a number, larger than the
// one before; ListingChanges returns the listings in that order with
// what a search matches, from after on, at most limit.
func testChangesNumberInserts(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	if docs := mustChanges(t, f, 0, nil, 10); len(docs) != 0 {
		t.Fatalf("empty store: ListingChanges = %+v", docs)
	}
	at := now()
	p := newPublisher(t)
	a := p.listing(t, at, agent.Record{
		Name: "feed-weather", DisplayName: "Feed Weather", Description: "Forecasts.\nRain or shine.",
		Tags:  []string{"weather", "forecast"},
		Owner: "alice",
		Skills: []agent.Skill{
			{ID: "forecast", Name: "Forecast", Description: "Five days", Examples: []string{"Rain in Paris?", "Sun?"}},
			{ID: "alerts", Name: "Alerts"},
		},
	})
	b := withStatus(p.listing(t, at, agent.Record{Name: "feed-bare"}), store.StatusStale)
	c := withStatus(p.listing(t, at, agent.Record{Name: "feed-offline", Tags: []string{}, Description: "gone quiet"}), store.StatusOffline)
	mustUpsert(t, s, a, b, c)

	docs := wantChanged(t, f, "after three inserts", 0, "feed-weather", "feed-bare", "feed-offline")
	if len(docs) != 3 {
		t.FailNow()
	}
	for i, l := range []store.Listing{a, b, c} {
		wantDoc(t, docs[i], l, agent.HealthUnknown)
	}
	if !(docs[0].Pos < docs[1].Pos && docs[1].Pos < docs[2].Pos) {
		t.Errorf("positions %d %d %d: not in first-seen order", docs[0].Pos, docs[1].Pos, docs[2].Pos)
	}

	wantChanged(t, f, "after the first", docs[0].ChangeSeq, "feed-bare", "feed-offline")
	wantChanged(t, f, "after the last", docs[2].ChangeSeq)
	for _, c := range []struct {
		limit int
		want  []string
	}{{1, []string{"feed-weather"}}, {2, []string{"feed-weather", "feed-bare"}}, {0, []string{"feed-weather"}}, {-5, []string{"feed-weather"}}, {store.MaxChanges + 1, []string{"feed-weather", "feed-bare", "feed-offline"}}} {
		if got := docNames(mustChanges(t, f, 0, nil, c.limit)); !slices.Equal(got, c.want) {
			t.Errorf("ListingChanges(limit %d) = %q, want %q", c.limit, got, c.want)
		}
	}
}

// testChangesNumberRecordUpdates: a newer version that changes what
// IndexDoc holds gives the row a new number, larger than any before
// (even a change of case only, which a full-text index folds away); a
// stale version, or a newer one that changes none of it, gives none.
func testChangesNumberRecordUpdates(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	base := agent.Record{
		Name: "feed-versions", DisplayName: "Feed Versions", Description: "the first text",
		Tags: []string{"alpha"}, Owner: "alice",
		Skills: []agent.Skill{{ID: "s1", Name: "Skill one"}},
		Seq:    1,
	}
	mustUpsert(t, s, p.listing(t, at, base), p.listing(t, at, agent.Record{Name: "feed-other"}))
	last := wantChanged(t, f, "inserts", 0, "feed-versions", "feed-other")[1].ChangeSeq

	seq := uint64(1)
	next := func(change func(r *agent.Record)) store.Listing {
		seq++
		r := base
		r.Tags = slices.Clone(base.Tags)
		r.Skills = slices.Clone(base.Skills)
		change(&r)
		r.Seq = seq
		base = r
		return p.listing(t, at.Add(time.Duration(seq)*time.Second), r)
	}
	for _, c := range []struct {
		what   string
		change func(r *agent.Record)
	}{
		{"description", func(r *agent.Record) { r.Description = "the second text" }},
		{"description, case only", func(r *agent.Record) { r.Description = "The Second Text" }},
		{"display name", func(r *agent.Record) { r.DisplayName = "Feed Versions!" }},
		{"tags", func(r *agent.Record) { r.Tags = append(r.Tags, "beta") }},
		{"no tags", func(r *agent.Record) { r.Tags = nil }},
		{"skills", func(r *agent.Record) { r.Skills[0].Examples = []string{"an example"} }},
		{"owner", func(r *agent.Record) { r.Owner = "bob" }},
	} {
		l := next(c.change)
		mustUpsert(t, s, l)
		docs := wantChanged(t, f, "a new version, "+c.what, last, l.Record.Name)
		if len(docs) == 1 {
			wantDoc(t, docs[0], l, agent.HealthUnknown)
			last = docs[0].ChangeSeq
		}
	}

	// A newer version with the same text, tags and owner: only seq,
	// times and envelope change.
	same := next(func(*agent.Record) {})
	mustUpsert(t, s, same)
	wantChanged(t, f, "a newer version that changes nothing a search sees", last)

	stale := p.listing(t, at, agent.Record{Name: "feed-versions", Description: "a stale intruder", Tags: []string{"stale"}, Seq: 1})
	if err := s.UpsertRecord(ctx, stale); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale UpsertRecord = %v, want ErrStale", err)
	}
	wantChanged(t, f, "a stale version", last)
	docs := mustChanges(t, f, 0, nil, 10)
	if got := docNames(docs); !slices.Equal(got, []string{"feed-other", same.Record.Name}) {
		t.Errorf("every listing by change number: %q", got)
	} else {
		wantDoc(t, docs[1], same, agent.HealthUnknown)
	}
}

// testChangesNumberStatusAndHealth: a status or health state that
// changes gives a number; a heartbeat that only moves last_seen, or a
// health report with the same state, gives none.
func testChangesNumberStatusAndHealth(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	ctx := testContext(t)
	at := now()
	p, h1, h2 := newPublisher(t), newPublisher(t), newPublisher(t)
	a := p.listing(t, at, hostedBy(h1, agent.Record{Name: "feed-h1-a"}))
	b := p.listing(t, at, hostedBy(h1, agent.Record{Name: "feed-h1-b"}))
	other := p.listing(t, at, hostedBy(h2, agent.Record{Name: "feed-h2"}))
	mustUpsert(t, s, a, b, other)
	last := lastChange(t, f)

	hostStatus := func(status string, seen time.Time) {
		t.Helper()
		if _, err := s.SetHostStatus(ctx, h1.peer, status, seen); err != nil {
			t.Fatalf("SetHostStatus(h1, %s): %v", status, err)
		}
	}
	// step applies a write and checks which listings it numbered.
	step := func(what string, write func(), names ...string) []store.IndexDoc {
		t.Helper()
		write()
		docs := wantChangedSet(t, f, what, last, names...)
		if len(docs) > 0 {
			last = docs[len(docs)-1].ChangeSeq
		}
		return docs
	}

	step("heartbeat on online listings", func() { hostStatus(store.StatusOnline, at.Add(time.Minute)) })
	if got := mustGet(t, s, a.Record.ID).LastSeen; !got.Equal(at.Add(time.Minute)) {
		t.Fatalf("fixture: the heartbeat did not move last_seen (%v)", got)
	}
	for _, d := range step("host stale", func() { hostStatus(store.StatusStale, at.Add(2*time.Minute)) }, "feed-h1-a", "feed-h1-b") {
		if d.Status != store.StatusStale {
			t.Errorf("%s after the host went stale: status %q", d.Name, d.Status)
		}
	}
	step("host stale again", func() { hostStatus(store.StatusStale, at.Add(3*time.Minute)) })
	for _, d := range step("host online again", func() { hostStatus(store.StatusOnline, at.Add(4*time.Minute)) }, "feed-h1-a", "feed-h1-b") {
		if d.Status != store.StatusOnline {
			t.Errorf("%s after the host came back: status %q", d.Name, d.Status)
		}
	}
	step("heartbeat again", func() { hostStatus(store.StatusOnline, at.Add(5*time.Minute)) })

	setHealth := func(h map[string]agent.Health) func() {
		return func() { mustSetHealth(t, s, h1.peer, h) }
	}
	degraded := health(agent.HealthDegraded, at)
	docs := step("health degraded", setHealth(map[string]agent.Health{a.Record.ID: degraded}), "feed-h1-a")
	if len(docs) == 1 && docs[0].Health != agent.HealthDegraded {
		t.Errorf("health of feed-h1-a = %q, want degraded", docs[0].Health)
	}
	step("the same health again", setHealth(map[string]agent.Health{a.Record.ID: degraded}))
	slower := degraded
	slower.LatencyMS, slower.SuccessRate, slower.CheckedAt = 900, 0.5, degraded.CheckedAt.Add(time.Minute)
	if n := mustSetHealth(t, s, h1.peer, map[string]agent.Health{a.Record.ID: slower}); n != 1 {
		t.Fatalf("fixture: SetHealth of a new latency changed %d listings, want 1", n)
	}
	step("the same state, other latency", func() {})
	step("health of another host's listing", setHealth(map[string]agent.Health{other.Record.ID: health(agent.HealthFailing, at)}))
	step("health failing and healthy", setHealth(map[string]agent.Health{
		a.Record.ID: health(agent.HealthFailing, at), b.Record.ID: health(agent.HealthHealthy, at),
	}), "feed-h1-a", "feed-h1-b")
}

// testChangesTombstoneAndExpiry: a tombstone is a change like any other,
// listed with Tombstone set; a listing going offline at expiry is one too.
func testChangesTombstoneAndExpiry(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	doomedRec := agent.Record{Name: "feed-doomed", Description: "to be deleted", Tags: []string{"weather"}, Owner: "alice", ExpiresAt: at.Add(3 * time.Hour)}
	doomed := p.listing(t, at, doomedRec)
	expiring := p.listing(t, at, agent.Record{Name: "feed-expiring", ExpiresAt: at.Add(time.Hour)})
	lasting := p.listing(t, at, agent.Record{Name: "feed-lasting", ExpiresAt: at.Add(3 * time.Hour)})
	mustUpsert(t, s, doomed, expiring, lasting)
	last := lastChange(t, f)

	// Only the tombstone flag changes: the rest is as it was.
	doomedRec.Tombstone, doomedRec.Seq = true, 2
	tomb := p.listing(t, at, doomedRec)
	mustUpsert(t, s, tomb)
	docs := wantChanged(t, f, "a tombstone", last, "feed-doomed")
	if len(docs) == 1 {
		if !docs[0].Tombstone {
			t.Errorf("tombstone listed with Tombstone false: %+v", docs[0])
		}
		wantDoc(t, docs[0], tomb, agent.HealthUnknown)
		last = docs[0].ChangeSeq
	}

	if n, err := s.ExpireListings(ctx, at.Add(90*time.Minute)); err != nil || n != 1 {
		t.Fatalf("ExpireListings = %d, %v; want 1", n, err)
	}
	docs = wantChanged(t, f, "expiry", last, "feed-expiring")
	if len(docs) == 1 {
		if docs[0].Status != store.StatusOffline {
			t.Errorf("expired listing: status %q, want offline", docs[0].Status)
		}
		last = docs[0].ChangeSeq
	}
	if _, err := s.ExpireListings(ctx, at.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	wantChanged(t, f, "expiry again", last)
	// Every listing once, at its latest number, tombstone included.
	wantChanged(t, f, "all", 0, "feed-lasting", "feed-doomed", "feed-expiring")
}

// testChangesAlso: also returns exactly the rows whose number it lists,
// even at or below after, once each, in number order with the rest, under
// the same limit; numbers no row holds (any more) are left out.
func testChangesAlso(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	at := now()
	p := newPublisher(t)
	var ls []store.Listing
	for _, name := range []string{"feed-1", "feed-2", "feed-3", "feed-4", "feed-5"} {
		ls = append(ls, p.listing(t, at, agent.Record{Name: name}))
	}
	mustUpsert(t, s, ls...)
	docs := wantChanged(t, f, "inserts", 0, "feed-1", "feed-2", "feed-3", "feed-4", "feed-5")
	if len(docs) != 5 {
		t.FailNow()
	}
	n := changeSeqs(docs)
	// feed-2 moves on: its old number is no row's any more.
	mustUpsert(t, s, p.listing(t, at, agent.Record{Name: "feed-2", Description: "moved on", Seq: 2}))
	docs = wantChanged(t, f, "an update", n[4], "feed-2")
	if len(docs) != 1 {
		t.FailNow()
	}
	moved := docs[0].ChangeSeq

	for _, c := range []struct {
		after int64
		also  []int64
		limit int
		want  []string
	}{
		{n[4], nil, 10, []string{"feed-2"}},
		{n[4], []int64{n[0], n[2]}, 10, []string{"feed-1", "feed-3", "feed-2"}},
		{n[4], []int64{n[2], n[0], n[2]}, 10, []string{"feed-1", "feed-3", "feed-2"}},
		{moved, []int64{n[3]}, 10, []string{"feed-4"}},
		{moved, []int64{n[1]}, 10, nil},                // feed-2's old number
		{moved, []int64{moved + 1000}, 10, nil},        // no such number
		{n[4], []int64{moved}, 10, []string{"feed-2"}}, // listed and after: once
		{n[2], []int64{n[0]}, 10, []string{"feed-1", "feed-4", "feed-5", "feed-2"}},
		{n[2], []int64{n[0]}, 2, []string{"feed-1", "feed-4"}},
		{0, []int64{n[0], n[4]}, 10, []string{"feed-1", "feed-3", "feed-4", "feed-5", "feed-2"}},
		{moved, []int64{}, 10, nil},
	} {
		got := docNames(mustChanges(t, f, c.after, c.also, c.limit))
		if !slices.Equal(got, c.want) && (len(got) != 0 || len(c.want) != 0) {
			t.Errorf("ListingChanges(after %d, also %v, limit %d) = %q, want %q (numbers %v, feed-2 now %d)",
				c.after, c.also, c.limit, got, c.want, n, moved)
		}
	}
}

// testChangesInBatch: writes in a batch (bulk import), with or without
// savepoints, are numbered as the same writes outside one; a call refused
// inside a batch, and a batch rolled back, leave no number.
func testChangesInBatch(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	b, ok := s.(store.Batcher)
	if !ok {
		t.Skipf("%T is not a store.Batcher", s)
	}
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	last := int64(0)
	for _, whole := range []bool{false, true} {
		name := map[bool]string{false: "feed-batch", true: "feed-whole"}[whole]
		run := b.InBatch
		if whole {
			run = b.InBatchWhole
		}
		one := p.listing(t, at, agent.Record{Name: name + "-one", Seq: 1})
		two := p.listing(t, at, agent.Record{Name: name + "-two", Seq: 1})
		newer := p.listing(t, at, agent.Record{Name: name + "-one", Seq: 2, Description: "newer"})
		same := p.listing(t, at, agent.Record{Name: name + "-two", Seq: 2})
		err := run(ctx, func(ctx context.Context, tx store.Tx) error {
			for _, l := range []store.Listing{one, two, newer, same} {
				if err := tx.UpsertRecord(ctx, l); err != nil {
					return err
				}
			}
			if !whole {
				// Refused alone: the batch goes on.
				if err := tx.UpsertRecord(ctx, one); !errors.Is(err, store.ErrStale) {
					t.Errorf("stale upsert in a batch = %v, want ErrStale", err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("batch (whole %v): %v", whole, err)
		}
		docs := wantChanged(t, f, "a batch", last, name+"-two", name+"-one")
		if len(docs) == 2 {
			wantDoc(t, docs[1], newer, agent.HealthUnknown)
			last = docs[1].ChangeSeq
		}
	}
	failed := errors.New("rolled back")
	err := b.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := tx.UpsertRecord(ctx, p.listing(t, at, agent.Record{Name: "feed-never"})); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("InBatchWhole = %v, want the function's error", err)
	}
	wantChanged(t, f, "a batch rolled back", last)
}

// testListingsAt: the listings at the positions asked for (tombstones
// too, missing ones left out), each with its position, its latest change
// number, the record GetAgent returns and the public JSON a search gives;
// PublicOnly gives the same JSON and node fields.
func testListingsAt(t *testing.T, s store.Store) {
	f := changeFeed(t, s)
	ctx := testContext(t)
	at := now()
	p, host := newPublisher(t), newPublisher(t)
	a := p.listing(t, at, hostedBy(host, agent.Record{
		Name: "feed-at-a", Description: "Weather.", Tags: []string{"weather"}, Owner: "alice",
		Skills: []agent.Skill{{ID: "f", Name: "Forecast", Examples: []string{"Rain?"}}},
	}))
	a.Local = true
	b := p.listing(t, at, agent.Record{Name: "feed-at-b"})
	c := withStatus(p.listing(t, at, agent.Record{Name: "feed-at-c"}), store.StatusStale)
	mustUpsert(t, s, a, b, c)
	mustUpsert(t, s, p.listing(t, at, agent.Record{Name: "feed-at-b", Tombstone: true, Seq: 2}))
	mustSetHealth(t, s, host.peer, map[string]agent.Health{a.Record.ID: health(agent.HealthDegraded, at)})

	latest := map[string]store.IndexDoc{}
	for _, d := range mustChanges(t, f, 0, nil, store.MaxChanges) {
		latest[d.Name] = d
	}
	if len(latest) != 3 {
		t.Fatalf("ListingChanges: %+v", latest)
	}
	missing := latest["feed-at-c"].Pos + 1000
	ask := []int64{latest["feed-at-b"].Pos, missing, latest["feed-at-a"].Pos}

	if got, err := f.ListingsAt(ctx, nil, false); err != nil || len(got) != 0 {
		t.Errorf("ListingsAt(nil) = %+v, %v", got, err)
	}
	if got, err := f.ListingsAt(ctx, []int64{missing}, true); err != nil || len(got) != 0 {
		t.Errorf("ListingsAt(missing) = %+v, %v", got, err)
	}
	for _, publicOnly := range []bool{false, true} {
		got, err := f.ListingsAt(ctx, ask, publicOnly)
		if err != nil {
			t.Fatalf("ListingsAt(%v, publicOnly %v): %v", ask, publicOnly, err)
		}
		byName := map[string]store.PosListing{}
		for _, pl := range got {
			byName[pl.Record.Name] = pl
		}
		if len(got) != 2 || len(byName) != 2 {
			t.Fatalf("ListingsAt(%v, publicOnly %v): %q, want feed-at-a and feed-at-b", ask, publicOnly, names(posListings(got)))
		}
		for _, name := range []string{"feed-at-a", "feed-at-b"} {
			pl, ok := byName[name]
			if !ok {
				t.Errorf("ListingsAt(publicOnly %v): %s missing", publicOnly, name)
				continue
			}
			d := latest[name]
			if pl.Pos != d.Pos || pl.ChangeSeq != d.ChangeSeq {
				t.Errorf("ListingsAt(publicOnly %v): %s at pos %d number %d, want %d %d", publicOnly, name, pl.Pos, pl.ChangeSeq, d.Pos, d.ChangeSeq)
			}
			stored := mustGet(t, s, pl.Record.ID)
			want, err := store.PublicRecordJSON(&stored.Record)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(pl.PublicJSON, want) {
				t.Errorf("ListingsAt(publicOnly %v): %s public JSON\n got %s\nwant %s", publicOnly, name, pl.PublicJSON, want)
			}
			if pl.Status != stored.Status || !pl.LastSeen.Equal(stored.LastSeen) || pl.HostPeerID != stored.HostPeerID ||
				pl.Local != stored.Local || pl.Health.State != stored.Health.State || pl.Record.Tombstone != stored.Record.Tombstone {
				t.Errorf("ListingsAt(publicOnly %v): %s node fields %+v, want those of %+v", publicOnly, name, pl.Listing, stored)
			}
			if publicOnly {
				continue
			}
			if !reflect.DeepEqual(pl.Record, stored.Record) {
				t.Errorf("ListingsAt: record of %s differs from GetAgent's:\n got %+v\nwant %+v", name, pl.Record, stored.Record)
			}
			wantListing(t, pl.Listing, stored)
			wantHealth(t, "ListingsAt: "+name, pl.Health, stored.Health)
		}
		if !strings.Contains(string(byName["feed-at-a"].PublicJSON), "Forecast") {
			t.Errorf("public JSON of feed-at-a without its skill: %s", byName["feed-at-a"].PublicJSON)
		}
	}
}

func posListings(pls []store.PosListing) []store.Listing {
	out := make([]store.Listing, len(pls))
	for i, pl := range pls {
		out[i] = pl.Listing
	}
	return out
}
