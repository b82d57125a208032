package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	msqlite "modernc.org/sqlite"
)

// TestExpireUnheardSkipsOwnListings: this node has no row in nodes, so a
// sweep took it for a host never heard and read every one of its own
// listings through agents_host (on an idle host of 100k agents, every
// 10 s, to find none to expire: they are all local; a fifth of its CPU,
// and the store deadline missed under load). Given this node's id, a
// sweep touches a few pages of the database, not one per own listing,
// expires none of them, and still expires the listings of a host never
// heard.
func TestExpireUnheardSkipsOwnListings(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "self.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const self, own = "this-node", 3000
	insert := func(id, host, status string, local int) {
		t.Helper()
		if _, err := db.w.ExecContext(ctx, `INSERT INTO agents (id, name, publisher, host_peer_id, status, local, last_seen, expires_at, seq, issued_at, envelope)
VALUES (?1, ?1, ?2, ?2, ?3, ?4, 1, 9e18, 1, 1, randomblob(1000))`, id, host, status, local); err != nil { // an envelope of a kilobyte
			t.Fatal(err)
		}
	}
	for i := range own {
		insert(fmt.Sprintf("own-%05d", i), self, "online", 1)
	}
	for i := range 5 {
		insert(fmt.Sprintf("unheard-%d", i), "never-heard-host", "stale", 0)
	}
	if _, err := db.w.ExecContext(ctx, `ANALYZE`); err != nil {
		t.Fatal(err)
	}
	before := pagesTouched(ctx, t, db)
	n, err := db.ExpireUnheard(ctx, time.Unix(0, 2), self)
	if err != nil {
		t.Fatal(err)
	}
	touched := pagesTouched(ctx, t, db) - before
	if n != 5 {
		t.Errorf("expired %d listings, want the 5 of the host never heard", n)
	}
	t.Logf("a sweep touched %d pages beside %d listings of this node", touched, own)
	if touched > 200 {
		t.Errorf("a sweep touched %d pages of the database beside %d listings of this node, want a few (a probe per host, the 5 expired)", touched, own)
	}
	var online int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM agents WHERE host_peer_id = ?1 AND status = 'online'`, self).Scan(&online); err != nil {
		t.Fatal(err)
	}
	if online != own {
		t.Errorf("%d of this node's %d listings online after the sweep, want all", online, own)
	}
}

// pagesTouched is how many pages the writer connection (the only one)
// has read from its cache or the file: SQLite's count of rows read.
func pagesTouched(ctx context.Context, t *testing.T, db *DB) int {
	t.Helper()
	c, err := db.write.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	total := 0
	if err := c.Raw(func(dc any) error {
		for _, op := range []msqlite.DBStatusOp{msqlite.DBStatusCacheHit, msqlite.DBStatusCacheMiss} {
			n, _, err := dc.(msqlite.DBStatus).Status(op, false)
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return total
}
