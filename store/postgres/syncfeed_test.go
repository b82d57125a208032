package postgres_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func syncListing(t *testing.T, key crypto.PrivKey, name string, seq uint64, at time.Time) store.Listing {
	t.Helper()
	pid, _ := peer.IDFromPrivateKey(key)
	rec := &agent.Record{Name: name, DisplayName: "Bot", Seq: seq, IssuedAt: at, ExpiresAt: at.Add(time.Hour),
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}}}
	env, err := agent.Seal(rec, key, at)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := agent.Open(env, at)
	if err != nil {
		t.Fatal(err)
	}
	return store.Listing{Record: *opened, Envelope: env, Status: store.StatusOnline, LastSeen: at, HostPeerID: opened.HostPeerID(), UpdatedAt: at}
}

// TestSyncChangesWaitsForInFlightNumbers: a number taken by a
// transaction still open is below one already visible; SyncChanges serves
// nothing past it until the transaction ends, so a reader continuing after
// next cannot skip it.
func TestSyncChangesWaitsForInFlightNumbers(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	a, b := syncListing(t, key, "first-bot", 1, at), syncListing(t, key, "second-bot", 1, at)
	for _, l := range []store.Listing{a, b} {
		if err := db.UpsertRecord(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	_, head, _, err := db.SyncChanges(ctx, 0, "", "", 0, at)
	if err != nil {
		t.Fatal(err)
	}

	taken, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.InTransaction(ctx, func(ctx context.Context, tx pgx.Tx) error {
			// A new seq takes the next number; the row stays invisible.
			if _, err := tx.Exec(ctx, `UPDATE agents SET seq = seq + 1 WHERE id = $1`, a.Record.ID); err != nil {
				return err
			}
			close(taken)
			<-release
			return nil
		})
	}()
	var once sync.Once
	end := func() { once.Do(func() { close(release) }) }
	defer end()
	select {
	case <-taken:
	case err := <-done:
		t.Fatalf("the transaction ended early: %v", err)
	}
	// A later number, visible at once.
	if err := db.UpsertRecord(ctx, syncListing(t, key, "second-bot", 2, at)); err != nil {
		t.Fatal(err)
	}
	envs, next, _, err := db.SyncChanges(ctx, head, "", "", 10, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 0 || next != head {
		t.Fatalf("with a number in flight: %d envelopes, next %d (head %d); want none and next = head", len(envs), next, head)
	}
	end()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	envs, next, _, err = db.SyncChanges(ctx, head, "", "", 10, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 2 || next <= head {
		t.Fatalf("after the commit: %d envelopes, next %d (head %d); want both listings", len(envs), next, head)
	}
}

// TestSyncChangesIgnoresOtherDatabases: a transaction left open in
// another database on the same server (another node's, a report, a
// stalled client) holds no number of this feed, so the feed serves past
// it. The cluster-wide snapshot served nothing while it stayed open.
func TestSyncChangesIgnoresOtherDatabases(t *testing.T) {
	db := pgtest.Open(t)
	ctx := context.Background()
	other, err := pgx.Connect(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the test's end
	// A write gives the other transaction an id: it stays in every
	// snapshot of the cluster until it ends.
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE held (n int); INSERT INTO held VALUES (1)`); err != nil {
		t.Fatal(err)
	}

	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	if err := db.UpsertRecord(ctx, syncListing(t, key, "served-bot", 1, at)); err != nil {
		t.Fatal(err)
	}
	envs, next, more, err := db.SyncChanges(ctx, 0, "", "", 10, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(envs) != 1 || next == 0 || more {
		t.Fatalf("with another database's transaction open: %d envelopes, next %d, more %v; want the listing", len(envs), next, more)
	}
}
