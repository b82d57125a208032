package postgres_test

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// openWithConn opens a store on a fresh database plus a plain connection to
// the same database, to check what the store wrote.
func openWithConn(t *testing.T) (*postgres.DB, *pgx.Conn) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	db, err := postgres.Open(t.Context(), url, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return db, conn
}

// listing builds a listing without signing it: the store trusts its caller,
// and this test is about the engine's SQL, not records.
func listing(name, host string, seq uint64, at time.Time, tags ...string) store.Listing {
	return store.Listing{
		Record: agent.Record{
			ID: "id-" + name, Name: name, DisplayName: name, Tags: tags,
			Publisher: "publisher", Seq: seq, IssuedAt: at, ExpiresAt: at.Add(time.Hour),
		},
		Envelope: []byte("envelope of " + name), Status: store.StatusOnline,
		LastSeen: at, HostPeerID: host, UpdatedAt: at,
	}
}

// TestTagVisibilityFollowsListings checks the denormalised
// agent_tags.visible against agents.visible after every write path that
// changes visibility; ListTags and Stats count from it.
func TestTagVisibilityFollowsListings(t *testing.T) {
	ctx := t.Context()
	db, conn := openWithConn(t)
	at := time.Now().UTC().Truncate(time.Microsecond)
	consistent := func(step string) {
		t.Helper()
		var bad int
		err := conn.QueryRow(ctx, `
SELECT count(*) FROM agent_tags t JOIN agents a ON a.id = t.agent_id
WHERE t.visible <> a.visible OR t.tag <> ALL (a.tags)`).Scan(&bad)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if bad != 0 {
			t.Errorf("%s: %d agent_tags rows disagree with agents", step, bad)
		}
	}
	wantTags := func(step string, want int) {
		t.Helper()
		st, err := db.Stats(ctx)
		if err != nil {
			t.Fatalf("%s: Stats: %v", step, err)
		}
		tags, err := db.ListTags(ctx, 100)
		if err != nil {
			t.Fatalf("%s: ListTags: %v", step, err)
		}
		if st.Tags != want || len(tags) != want {
			t.Errorf("%s: Stats.Tags %d, ListTags %v; want %d tags", step, st.Tags, tags, want)
		}
	}

	for i := range 6 {
		l := listing(fmt.Sprintf("agent-%d", i), fmt.Sprintf("host-%d", i%2), 1, at, "all", fmt.Sprintf("own-%d", i))
		if err := db.UpsertRecord(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	consistent("after inserts")
	wantTags("after inserts", 7)

	// An update drops one tag and keeps another.
	if err := db.UpsertRecord(ctx, listing("agent-0", "host-0", 2, at, "all", "fresh")); err != nil {
		t.Fatal(err)
	}
	consistent("after an update")
	wantTags("after an update", 7) // own-0 went, fresh came

	// Hosts going offline hide their listings' tags.
	if n, err := db.SetHostStatus(ctx, "host-1", store.StatusOffline, at); err != nil || n != 3 {
		t.Fatalf("SetHostStatus(host-1, offline) = %d, %v", n, err)
	}
	consistent("after SetHostStatus offline")
	wantTags("after SetHostStatus offline", 4) // all, fresh, own-2, own-4

	// Expiry hides the rest.
	if n, err := db.ExpireListings(ctx, at.Add(2*time.Hour)); err != nil || n != 3 {
		t.Fatalf("ExpireListings = %d, %v", n, err)
	}
	consistent("after ExpireListings")
	wantTags("after ExpireListings", 0)

	// A newer record brings one back.
	if err := db.UpsertRecord(ctx, listing("agent-2", "host-0", 2, at.Add(2*time.Hour), "all")); err != nil {
		t.Fatal(err)
	}
	consistent("after republishing")
	wantTags("after republishing", 1)
}

// TestSeqOutOfRange: Postgres has no unsigned bigint; a seq above
// math.MaxInt64 is refused with an error rather than wrapped around.
func TestSeqOutOfRange(t *testing.T) {
	db := pgtest.Open(t)
	l := listing("huge-seq", "host", math.MaxInt64+1, time.Now().UTC())
	if err := db.UpsertRecord(t.Context(), l); err == nil {
		t.Fatal("UpsertRecord with seq 2^63 succeeded")
	}
	l.Record.Seq = math.MaxInt64
	if err := db.UpsertRecord(t.Context(), l); err != nil {
		t.Fatalf("UpsertRecord with seq 2^63-1: %v", err)
	}
}

// TestSearchVectorParts: hyphenated names and tags are searchable by their
// parts as well as whole, and skills are searched.
func TestSearchVectorParts(t *testing.T) {
	ctx := t.Context()
	db := pgtest.Open(t)
	l := listing("weather-bot", "host", 1, time.Now().UTC(), "sea-forecast")
	l.Record.Skills = []agent.Skill{{ID: "tides", Name: "Tides", Examples: []string{"When is high water?"}}}
	if err := db.UpsertRecord(ctx, l); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"weather", "bot", "weather bot", "sea", "forec", "tides", "high water"} {
		page, err := db.SearchAgents(ctx, store.SearchQuery{Q: q})
		if err != nil || len(page.Listings) != 1 {
			t.Errorf("search %q: %d results, %v; want the listing", q, len(page.Listings), err)
		}
	}
}

// TestSearchUnstorableFilters: filter values Postgres text cannot hold match
// nothing instead of failing the query.
func TestSearchUnstorableFilters(t *testing.T) {
	ctx := t.Context()
	db := pgtest.Open(t)
	for _, v := range []string{"a\x00b", "\xff\xfe"} {
		for _, q := range []store.SearchQuery{{Tags: []string{v}}, {Owner: v}, {Statuses: []string{v}}, {Q: "x", Tags: []string{v}}} {
			page, err := db.SearchAgents(ctx, q)
			if err != nil || len(page.Listings) != 0 {
				t.Errorf("SearchAgents(%+q) = %d listings, %v; want none, no error", v, len(page.Listings), err)
			}
		}
		if envs, next, err := db.CatalogueEnvelopes(ctx, 0, v, 10, time.Now()); err != nil || len(envs) != 0 || next != 0 {
			t.Errorf("CatalogueEnvelopes(tag %+q) = %d, %d, %v", v, len(envs), next, err)
		}
	}
}
