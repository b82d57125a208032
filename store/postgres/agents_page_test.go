package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// countStatementsSQL makes the database count the INSERT statements run
// on agents and on agent_tags (a statement trigger fires once per
// statement, whatever rows it writes, in a WITH too).
const countStatementsSQL = `
CREATE TABLE test_statements (tbl text PRIMARY KEY, n integer NOT NULL);
CREATE FUNCTION test_count_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO test_statements VALUES (TG_TABLE_NAME, 1)
	ON CONFLICT (tbl) DO UPDATE SET n = test_statements.n + 1;
	RETURN NULL;
END $$;
CREATE TRIGGER test_count_agents AFTER INSERT ON agents
FOR EACH STATEMENT EXECUTE FUNCTION test_count_statement();
CREATE TRIGGER test_count_agent_tags AFTER INSERT ON agent_tags
FOR EACH STATEMENT EXECUTE FUNCTION test_count_statement();`

// pageDumpSQL is every table a listing's write touches, row by row, with
// the numbers of the sync feed: two databases cloned from one template
// that were given the same writes dump the same. The change feed's rows
// are compared without their numbers (numberedSince): a listing whose
// record and tags both change is numbered twice, by the triggers on
// agents and on agent_records, and in one statement all of agents' fire
// before agent_records', so its final number differs (it is new, larger
// than any before, as the feed requires).
var pageDumpSQL = []string{
	`SELECT row_to_json(a)::text FROM agents a ORDER BY pos`,
	`SELECT row_to_json(r)::text FROM agent_records r ORDER BY id`,
	`SELECT row_to_json(t)::text FROM agent_tags t ORDER BY agent_id, tag`,
	`SELECT pos::text || ' ' || coalesce(gone_at::text, '') FROM agent_changes ORDER BY pos`,
	`SELECT row_to_json(s)::text FROM agent_sync s ORDER BY pos`,
}

// TestUpsertRecordsOneStatementAPage: a page written by the batch's
// PageWriter is one statement, not two per listing (the listing, then its
// tags), and leaves the database as UpsertRecord one listing at a time
// does, row for row: the same rows of agents, agent_records and
// agent_tags, the same positions, and the same numbers of the change feed
// and the sync feed (migrations 0006, 0008), the same listings stale.
func TestUpsertRecordsOneStatementAPage(t *testing.T) {
	ctx := t.Context()
	one, page := openRaw(t), openRaw(t)
	if _, err := page.conn.Exec(ctx, countStatementsSQL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	pages := testPages(t0)
	for k, ls := range pages {
		lastOne, lastPage := maxChange(t, one.conn), maxChange(t, page.conn)
		var want, got []bool
		err := one.db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
			want = make([]bool, len(ls))
			for i := range ls {
				err := tx.UpsertRecord(ctx, ls[i])
				switch {
				case err == nil:
					want[i] = true
				case !errors.Is(err, store.ErrStale):
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("page %d, one listing at a time: %v", k, err)
		}
		if _, err := page.conn.Exec(ctx, `TRUNCATE test_statements`); err != nil {
			t.Fatal(err)
		}
		err = page.db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
			pw, ok := tx.(store.PageWriter)
			if !ok {
				return fmt.Errorf("the batch's Tx %T is not a store.PageWriter", tx)
			}
			var err error
			got, err = pw.UpsertRecords(ctx, ls)
			return err
		})
		if err != nil {
			t.Fatalf("page %d: %v", k, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("page %d: changed %v, want %v (UpsertRecord's)", k, got, want)
		}
		if got, want := dump(t, page.conn, numberedSince(lastPage)), dump(t, one.conn, numberedSince(lastOne)); !slices.Equal(got, want) {
			t.Errorf("page %d: listings given a change number %v, want %v", k, got, want)
		}
		counts := map[string]int{}
		rows, _ := page.conn.Query(ctx, `SELECT tbl, n FROM test_statements`)
		var tbl string
		var n int
		if _, err := pgx.ForEachRow(rows, []any{&tbl, &n}, func() error { counts[tbl] = n; return nil }); err != nil {
			t.Fatal(err)
		}
		if counts["agents"] != 1 || counts["agent_tags"] > 1 {
			t.Errorf("page %d of %d listings: %d INSERT statements on agents and %d on agent_tags, want 1 and at most 1", k, len(ls), counts["agents"], counts["agent_tags"])
		}
	}
	for _, q := range pageDumpSQL {
		want, got := dump(t, one.conn, q), dump(t, page.conn, q)
		if len(want) == 0 {
			t.Fatalf("%s: no rows", q)
		}
		if !slices.Equal(got, want) {
			for i := range max(len(got), len(want)) {
				var g, w string
				if i < len(got) {
					g = got[i]
				}
				if i < len(want) {
					w = want[i]
				}
				if g != w {
					t.Errorf("%s: row %d differs:\n page: %s\n  one: %s", q, i, g, w)
					break
				}
			}
			t.Errorf("%s: %d rows from pages, %d one listing at a time", q, len(got), len(want))
		}
	}
}

// TestUpsertRecordsPlannedEachPage: the page statement is planned for
// each page, never prepared: a prepared statement is planned generically
// after five runs, and a store filled from empty kept the plan of a
// small agent_tags, a scan of all of it for every page (a 1M seed on
// Postgres slowed down as agent_tags grew).
func TestUpsertRecordsPlannedEachPage(t *testing.T) {
	ctx := t.Context()
	u := pgtest.NewDatabase(t)
	if pu, err := url.Parse(u); err == nil && pu.Scheme != "" {
		q := pu.Query()
		q.Set("pool_max_conns", "1") // one connection: its prepared statements are all
		pu.RawQuery = q.Encode()
		u = pu.String()
	} else {
		u += " pool_max_conns=1"
	}
	db, err := postgres.Open(ctx, u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	first := testPages(t0)[0]
	for k := range 8 {
		ls := first[8*k : 8*k+8]
		err := db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
			pw, ok := tx.(store.PageWriter)
			if !ok {
				return fmt.Errorf("the batch's Tx %T is not a store.PageWriter", tx)
			}
			_, err := pw.UpsertRecords(ctx, ls)
			return err
		})
		if err != nil {
			t.Fatalf("page %d: %v", k, err)
		}
	}
	n, err := postgres.PreparedStatements(ctx, db, "upsert_records")
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("after 8 pages the connection holds %d prepared page statements, want 0 (planned for each page)", n)
	}
	if n, err := postgres.PreparedStatements(ctx, db, "get_agent"); err != nil || n != 0 {
		t.Fatalf("before any get_agent: %d prepared (%v)", n, err)
	}
	if _, err := db.GetAgent(ctx, first[0].Record.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := postgres.PreparedStatements(ctx, db, "get_agent"); err != nil || n != 1 {
		t.Errorf("after a get_agent: %d prepared (%v), want 1: the count sees the pool's connection", n, err)
	}
}

// TestUpsertRecordsTagsByKey: a page rewrites its listings' tags
// through agent_tags' key, not with a scan of all of agent_tags, in a
// store that has no statistics of it (filled from empty, not analyzed:
// autovacuum off, or not yet by).
func TestUpsertRecordsTagsByKey(t *testing.T) {
	ctx := t.Context()
	db := pgtest.Open(t)
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	const pages, size = 24, 256
	page := func(k int, seq uint64) []store.Listing {
		ls := make([]store.Listing, size)
		for i := range ls {
			n := k*size + i
			rec := agent.Record{
				ID: fmt.Sprintf("tagged-%06d", n), Name: fmt.Sprintf("tagged-%d", n), Seq: seq,
				Tags:     []string{"common", fmt.Sprintf("tag-%d", n%97), fmt.Sprintf("seq-%d", seq)},
				IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour),
			}
			ls[i] = store.Listing{Record: rec, Status: store.StatusStale, LastSeen: t0, UpdatedAt: t0}
		}
		return ls
	}
	for k := range pages { // ~18,000 rows of agent_tags
		if _, err := postgres.PageTagScans(ctx, db, page(k, 1)); err != nil {
			t.Fatalf("page %d: %v", k, err)
		}
	}
	for _, ls := range [][]store.Listing{page(pages, 1), page(3, 2)} { // new listings, then updates
		scans, err := postgres.PageTagScans(ctx, db, ls)
		if err != nil {
			t.Fatal(err)
		}
		if scans != 0 {
			t.Errorf("a page of %d listings (%s) scanned agent_tags %d times, want 0 (its key)", len(ls), ls[0].Record.ID, scans)
		}
	}
	tags, err := db.ListTags(ctx, 200)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, tc := range tags {
		counts[tc.Tag] = tc.Count
	}
	if counts["common"] != (pages+1)*size || counts["seq-2"] != size || counts["seq-1"] != pages*size {
		t.Errorf("tags after the pages: common %d, seq-1 %d, seq-2 %d; want %d, %d, %d", counts["common"], counts["seq-1"], counts["seq-2"], (pages+1)*size, pages*size, size)
	}
}

// TestExpireUnheardReadsHostsNotListings: a sweep of ExpireUnheard over
// a catalogue of stale listings whose hosts were all heard reads a few
// rows (a probe per host), not every stale listing (at 1M listings of 50
// heard hosts, ~1 s a sweep, past the store deadline on a loaded
// machine); the listings of a host never heard are expired.
func TestExpireUnheardReadsHostsNotListings(t *testing.T) {
	ctx := t.Context()
	raw := openRaw(t)
	db := raw.db
	t0 := time.Date(2026, 12, 6, 5, 0, 0, 0, time.UTC)
	hosts := []string{"heard-host-a", "heard-host-b", "never-heard-host"}
	for _, h := range hosts[:2] {
		if err := db.UpsertNode(ctx, store.Node{PeerID: h, LastHeartbeat: t0, Status: store.StatusStale}); err != nil {
			t.Fatal(err)
		}
	}
	const pages, size = 12, 256
	for k := range pages {
		ls := make([]store.Listing, size)
		for i := range ls {
			n := k*size + i
			host := hosts[n%2]
			if k == pages-1 && i < 5 {
				host = hosts[2]
			}
			rec := agent.Record{ID: fmt.Sprintf("unheard-%05d", n), Name: fmt.Sprintf("unheard-%d", n), Seq: 1,
				IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
			ls[i] = store.Listing{Record: rec, Status: store.StatusStale, HostPeerID: host, LastSeen: t0, UpdatedAt: t0}
		}
		if _, err := postgres.PageTagScans(ctx, db, ls); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.conn.Exec(ctx, `ANALYZE agents`); err != nil { // as autovacuum would
		t.Fatal(err)
	}
	expired, read, err := postgres.ExpireUnheardReads(ctx, db, t0.Add(time.Hour), "this-node")
	if err != nil {
		t.Fatal(err)
	}
	if expired != 5 {
		t.Errorf("expired %d listings, want the 5 of the host never heard", expired)
	}
	if read > 50 {
		t.Errorf("a sweep read %d rows of agents for %d stale listings of 3 hosts, want a few (a probe per host, the 5 expired)", read, pages*size)
	}
}

// TestExpireUnheardSkipsOwnListings: this node has no row in nodes, so a
// sweep took it for a host never heard and read every one of its own
// listings through agents_host (on an idle host of 100k agents, every
// 10 s, to find none to expire: they are all local). Given this node's
// id, a sweep reads a few rows, not its listings, expires none of them,
// and still expires the listings of a host never heard.
func TestExpireUnheardSkipsOwnListings(t *testing.T) {
	ctx := t.Context()
	raw := openRaw(t)
	db := raw.db
	t0 := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	const self, pages, size = "this-node", 12, 256
	for k := range pages {
		ls := make([]store.Listing, size)
		for i := range ls {
			n := k*size + i
			rec := agent.Record{ID: fmt.Sprintf("own-%05d", n), Name: fmt.Sprintf("own-%d", n), Seq: 1,
				IssuedAt: t0, ExpiresAt: t0.Add(24 * time.Hour)}
			ls[i] = store.Listing{Record: rec, Status: store.StatusOnline, HostPeerID: self, Local: true, LastSeen: t0, UpdatedAt: t0}
			if k == pages-1 && i < 5 {
				rec.ID, rec.Name = fmt.Sprintf("unheard-%05d", n), fmt.Sprintf("unheard-%d", n)
				ls[i] = store.Listing{Record: rec, Status: store.StatusStale, HostPeerID: "never-heard-host", LastSeen: t0, UpdatedAt: t0}
			}
		}
		if _, err := postgres.PageTagScans(ctx, db, ls); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.conn.Exec(ctx, `ANALYZE agents`); err != nil { // as autovacuum would
		t.Fatal(err)
	}
	expired, read, err := postgres.ExpireUnheardReads(ctx, db, t0.Add(time.Hour), self)
	if err != nil {
		t.Fatal(err)
	}
	if expired != 5 {
		t.Errorf("expired %d listings, want the 5 of the host never heard", expired)
	}
	if read > 50 {
		t.Errorf("a sweep read %d rows of agents beside %d listings of this node, want a few (a probe per host, the 5 expired)", read, pages*size-5)
	}
	var own int
	if err := raw.conn.QueryRow(ctx, `SELECT count(*) FROM agents WHERE host_peer_id = $1 AND status = 'online'`, self).Scan(&own); err != nil {
		t.Fatal(err)
	}
	if own != pages*size-5 {
		t.Errorf("%d of this node's %d listings online after the sweep, want all", own, pages*size-5)
	}
}

// testPages is a catalogue's first sync page and a second one of updates
// (newer and stale seqs, tags changed, dropped and added, a tombstone, a
// listing going offline) with new listings in between.
func testPages(t0 time.Time) [][]store.Listing {
	listing := func(i int, seq uint64, status string, tags ...string) store.Listing {
		rec := agent.Record{
			ID:          fmt.Sprintf("page-agent-%03d", i),
			Name:        fmt.Sprintf("agent-%03d", i),
			DisplayName: fmt.Sprintf("Agent %d v%d", i, seq),
			Description: fmt.Sprintf("does thing %d, version %d", i, seq),
			Tags:        tags,
			Skills:      []agent.Skill{{Name: fmt.Sprintf("skill-%d", i%5)}},
			Version:     "1.0",
			Publisher:   fmt.Sprintf("publisher-%d", i%3),
			Seq:         seq,
			IssuedAt:    t0.Add(time.Duration(seq) * time.Minute),
			ExpiresAt:   t0.Add(24 * time.Hour),
		}
		if i%7 == 0 {
			rec.Skills = nil
		}
		return store.Listing{
			Record: rec, Envelope: []byte(fmt.Sprintf("envelope %d %d", i, seq)), Status: status,
			LastSeen: t0, HostPeerID: rec.Publisher, Local: i%11 == 0, UpdatedAt: t0.Add(time.Duration(seq) * time.Second),
		}
	}
	var first, second []store.Listing
	for i := range 64 {
		switch i % 4 {
		case 0:
			first = append(first, listing(i, 1, store.StatusOnline))
		case 1:
			first = append(first, listing(i, 1, store.StatusStale, "alpha", "beta"))
		case 2:
			first = append(first, listing(i, 1, store.StatusOnline, "alpha", "alpha", "gamma"))
		default:
			first = append(first, listing(i, 1, store.StatusOffline, "delta"))
		}
	}
	for i := 64; i < 80; i++ {
		second = append(second, listing(i, 1, store.StatusStale, "new"))
	}
	for i := range 64 {
		switch i % 6 {
		case 0: // held already, same seq: stale
			second = append(second, listing(i, 1, store.StatusOnline, "never"))
		case 1: // tags: one dropped, one added
			second = append(second, listing(i, 2, store.StatusOnline, "beta", "epsilon"))
		case 2: // every tag dropped
			second = append(second, listing(i, 3, store.StatusStale))
		case 3: // a tombstone
			l := listing(i, 2, store.StatusOnline, "delta")
			l.Record.Tombstone = true
			second = append(second, l)
		case 4: // offline: its tags are not visible
			second = append(second, listing(i, 2, store.StatusOffline, "alpha"))
		}
	}
	return [][]store.Listing{first, second}
}

// rawDB is a store and a connection of its own to its database.
type rawDB struct {
	db   *postgres.DB
	conn *pgx.Conn
}

func openRaw(t *testing.T) rawDB {
	t.Helper()
	u := pgtest.NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, u, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return rawDB{db: db, conn: conn}
}

// numberedSince lists the positions whose change number is above after.
func numberedSince(after int64) string {
	return fmt.Sprintf(`SELECT pos::text FROM agent_changes WHERE change_seq > %d ORDER BY pos`, after)
}

func maxChange(t *testing.T, conn *pgx.Conn) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(t.Context(), `SELECT coalesce(max(change_seq), 0) FROM agent_changes`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func dump(t *testing.T, conn *pgx.Conn, q string) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}
