// Package sqlitetest gives tests a fresh, migrated SQLite store on a
// temporary file, the embedded engine's twin of pgtest.Open.
package sqlitetest

import (
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/agentsite/agentsite/store/sqlite"
)

// Open returns a store on a new database file in tb's temporary
// directory, closed when tb ends.
func Open(tb testing.TB) *sqlite.DB {
	tb.Helper()
	db, err := sqlite.Open(tb.Context(), filepath.Join(tb.TempDir(), "test.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatalf("sqlitetest: open store: %v", err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	return db
}
