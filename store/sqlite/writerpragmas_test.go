package sqlite

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
)

// TestWriterPragmas: the writer connection runs with a file-backed
// statement journal (temp_store 0: an in-memory one is built of 1 KiB
// chunks, a fifth of an import's CPU), a 32 MiB page cache and a
// checkpoint every 32,768 WAL pages; the readers keep SQLite's defaults
// but for a 128 KiB page cache each (a pool of them, in C memory outside
// the Go heap's limit).
func TestWriterPragmas(t *testing.T) {
	ctx := t.Context()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "agentsite.db"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		pragma       string
		write, reads int64
	}{
		{"temp_store", 0, 0},
		{"cache_size", -32768, -128},
		{"wal_autocheckpoint", 32768, 1000},
	} {
		var w, r int64
		if err := db.write.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&w); err != nil {
			t.Fatal(err)
		}
		if err := db.read.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&r); err != nil {
			t.Fatal(err)
		}
		if w != tc.write || r != tc.reads {
			t.Errorf("PRAGMA %s: writer %d, readers %d; want %d and %d", tc.pragma, w, r, tc.write, tc.reads)
		}
	}
}
