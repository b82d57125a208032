package sqlite

import (
	"fmt"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// stmtJournalSpill is how much of a statement journal SQLite keeps in
// memory, in one chunk, before it moves it to a temporary file (SQLite's
// default: 64 KiB). A statement that writes a page of listings through
// their triggers (a mirror's page, an import's chunk) journals every page
// it changes that existed before it, a few MiB at 1M listings (the
// catalogue's random-keyed indexes); past 64 KiB each page went to a new
// temporary file in two pwrite calls, and the file was created and
// removed at each such statement: 7 % of an import's CPU (BENCHMARKS.md,
// "1M catalogue"). The chunk is allocated when a statement first journals
// a page and freed when it ends; only the pages written are touched.
const stmtJournalSpill = 16 << 20

// stmtJournalSet is whether stmtJournalSpill took: sqlite3_config is a
// setting of the SQLite library linked in, not of a connection, and
// SQLite takes it only before its first connection opens; package
// initialization runs before any. Should a package opening connections in
// its own initialization come first, SQLite's default stays: slower, not
// wrong (TestStmtJournalSpill).
var stmtJournalSet = setStmtJournalSpill(stmtJournalSpill)

// setStmtJournalSpill calls sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL,
// n) through the transpiled library; it fails (SQLITE_MISUSE) once SQLite
// is initialized.
func setStmtJournalSpill(n int32) error {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.Xmalloc(tls, 8) // one variadic argument, 8 bytes in the C ABI
	if va == 0 {
		return fmt.Errorf("sqlite: statement journal spill: out of memory")
	}
	defer libc.Xfree(tls, va)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_STMTJRNL_SPILL, libc.VaList(va, n)); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite: set the statement journal spill to %d bytes: result code %d", n, rc)
	}
	return nil
}
