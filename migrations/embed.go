// Package migrations holds the numbered SQL migrations of both store engines,
// embedded so the binary carries its own schema. golang-migrate applies them
// at start through its iofs source; the file names (NNNN_name.up.sql /
// NNNN_name.down.sql) are its version numbers.
package migrations

import "embed"

// Postgres is the schema of store/postgres, in the directory "postgres".
//
//go:embed postgres/*.sql
var Postgres embed.FS

// SQLite is the schema of store/sqlite, in the directory "sqlite".
//
//go:embed sqlite/*.sql
var SQLite embed.FS
