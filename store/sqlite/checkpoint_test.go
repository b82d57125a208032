package sqlite

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
)

// TestCheckpointer: what the writer commits is copied back into the
// database by the checkpointer, on its own connection, once enough commits
// were made, without the writer reaching its wal_autocheckpoint (a COMMIT
// that checkpoints makes every write queued behind it wait); and Close
// stops it.
func TestCheckpointer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentsite.db")
	db, err := Open(t.Context(), path, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.ckpt == nil {
		t.Fatal("no checkpointer on a writable database")
	}
	if err := db.closeCheckpointer(); err != nil {
		t.Fatal(err)
	}
	if err := db.startCheckpointer(path, 10*time.Millisecond, 20, time.Hour); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	write := func(i int) {
		t.Helper()
		c := store.Conversation{ID: fmt.Sprintf("conv-%02d", i), AgentID: "a", OwnerKey: "o", CreatedAt: now, UpdatedAt: now}
		if _, _, err := db.StartConversation(t.Context(), c, &store.Message{Role: "user", Text: "hello", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		write(i)
	}
	waitfor.Until(t, 20*time.Second, "the checkpointer to copy the WAL back", func() bool {
		f, c := db.ckpt.frames.Load(), db.ckpt.copied.Load()
		return f > 0 && c == f
	})
	if f := db.ckpt.frames.Load(); f >= 32768 {
		t.Fatalf("the WAL held %d frames: past wal_autocheckpoint, the writer checkpointed", f)
	}
	ckpt := db.ckpt
	if err := db.closeCheckpointer(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ckpt.done:
	default:
		t.Fatal("the checkpointer's loop runs after it was closed")
	}
	db.ckpt = nil // closed above; Close has nothing more to stop
}

// TestCheckpointDue: a busy node checkpoints once checkpointWrites
// commits were made, a quiet one once checkpointAge passed with any, an
// idle one never.
func TestCheckpointDue(t *testing.T) {
	c := &checkpointer{minWrites: checkpointWrites, maxAge: checkpointAge}
	for _, tc := range []struct {
		writes  uint64
		elapsed time.Duration
		want    bool
	}{
		{0, time.Hour, false},
		{1, time.Second, false},
		{checkpointWrites - 1, checkpointAge - time.Second, false},
		{checkpointWrites, time.Second, true},
		{1, checkpointAge, true},
	} {
		if got := c.due(tc.writes, tc.elapsed); got != tc.want {
			t.Errorf("due(%d writes, %s) = %v, want %v", tc.writes, tc.elapsed, got, tc.want)
		}
	}
}
