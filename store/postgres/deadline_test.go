package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// TestStoreDeadline: on a frozen server every kind of call (a ping, a
// statement, its row, its rows, a transaction) ends at the store deadline
// with ErrUnavailable; a caller's own cancellation or earlier deadline
// keeps its error; once the server answers again, so does the store.
func TestStoreDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	proxy := pgtest.NewProxy(t, pgtest.NewDatabase(t))
	db, err := postgres.OpenWith(t.Context(), proxy.URL(), slog.New(slog.DiscardHandler), store.Options{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	at := time.Now().UTC().Truncate(time.Microsecond)
	getAgent := func(ctx context.Context) error {
		_, err := db.GetAgent(ctx, "id-missing")
		return err
	}
	calls := map[string]func(ctx context.Context) error{
		"ping": db.Ping,
		"row":  getAgent,
		"exec": func(ctx context.Context) error {
			return db.UpsertNode(ctx, store.Node{PeerID: "p", Status: store.StatusOnline})
		},
		"rows":        func(ctx context.Context) error { _, err := db.ListNodes(ctx, store.NodeQuery{}); return err },
		"transaction": func(ctx context.Context) error { return db.UpsertRecord(ctx, listing("frozen", "host", 1, at)) },
	}

	proxy.Freeze()
	for name, call := range calls {
		// The server stays frozen, so only a deadline ends the call: the
		// store's gives ErrUnavailable, this far later one of the caller's
		// would not.
		guard, cancelGuard := context.WithTimeout(t.Context(), 30*time.Second)
		err := call(guard)
		cancelGuard()
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s on a frozen server: %v, want ErrUnavailable (the %v store deadline)", name, err, timeout)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout/6)
	defer cancel()
	if err := getAgent(ctx); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller's own earlier deadline: %v, want DeadlineExceeded only", err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	cancel()
	if err := getAgent(ctx); errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled by the caller: %v, want context.Canceled only", err)
	}

	proxy.Restore()
	deadline := time.Now().Add(20 * time.Second)
	for err := getAgent(t.Context()); !errors.Is(err, store.ErrNotFound); err = getAgent(t.Context()) {
		if time.Now().After(deadline) {
			t.Fatalf("after the freeze: GetAgent = %v, want ErrNotFound", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
