package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store/postgres"
)

// database is the fresh store the run seeds and serves: a temporary Postgres
// database, or a SQLite file in a temporary data dir.
type database struct {
	engine  string // postgres | sqlite
	url     string // --database-url of the server; empty for embedded SQLite
	dataDir string // --data-dir of the server (and of the seeding, for SQLite)
	kept    bool   // dataDir is --data-dir's, or the database --keep-db's: kept after the run

	adminURL string // Postgres only: where to drop the database from
	name     string // Postgres only: the database name
}

// newDatabase creates the store the run works on. For Postgres it creates
// agentsite_load_<random> through the admin URL; for SQLite it only picks a
// data dir under tmp (storeopen creates the file).
func newDatabase(ctx context.Context, cfg *config, tmp string, progress func(string, ...any)) (*database, error) {
	dataDir := filepath.Join(tmp, "data")
	if cfg.DataDir != "" {
		dataDir = cfg.DataDir
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	if cfg.Store == "sqlite" {
		progress("store: embedded SQLite in %s", dataDir)
		return &database{engine: "sqlite", dataDir: dataDir, kept: cfg.DataDir != ""}, nil
	}
	name := cfg.KeepDB
	if name == "" {
		var rnd [6]byte
		if _, err := rand.Read(rnd[:]); err != nil {
			return nil, err
		}
		name = "agentsite_load_" + hex.EncodeToString(rnd[:])
	}
	dbURL, err := withDatabase(cfg.PostgresURL, name)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	created, err := postgres.CreateDatabase(cctx, cfg.PostgresURL, name)
	if errors.Is(err, postgres.ErrServerUnreachable) {
		return nil, fmt.Errorf("no Postgres server answers at --postgres-url; start one, or run with --store sqlite: %w", errors.Unwrap(err))
	}
	if err != nil {
		return nil, fmt.Errorf("--postgres-url: %w", err)
	}
	switch {
	case !created && cfg.KeepDB == "":
		return nil, fmt.Errorf("database %s already exists; the run needs a fresh one, try again", name)
	case cfg.KeepDB != "" && created:
		progress("store: Postgres database %s, created and kept (--keep-db)", name)
	case cfg.KeepDB != "":
		progress("store: Postgres database %s, kept (--keep-db)", name)
	default:
		progress("store: Postgres database %s", name)
	}
	return &database{engine: "postgres", url: dbURL, dataDir: dataDir, kept: cfg.KeepDB != "", adminURL: cfg.PostgresURL, name: name}, nil
}

// where names the store for the progress lines.
func (d *database) where() string {
	if d.engine == "postgres" {
		return "database " + d.name
	}
	return d.dataDir
}

// seededMark is the file in a kept --data-dir that says how many
// listings were seeded into it.
const seededMark = "agentsite-load-seeded"

// seeded tells whether the store is a kept one (--data-dir, --keep-db)
// already seeded with n listings. A kept Postgres database that holds
// listings but not that seed (a seed stopped half way, another
// --listings) is an error: seeding needs an empty store, and the tool
// drops no database it was given by name.
func (d *database) seeded(ctx context.Context, n int) (bool, error) {
	if !d.kept {
		return false, nil
	}
	if d.engine != "postgres" {
		b, err := os.ReadFile(filepath.Join(d.dataDir, seededMark))
		return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(n), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return false, fmt.Errorf("connect to %s: %w", d.name, err)
	}
	defer conn.Close(context.Background())
	var mark string
	var tables bool
	err = conn.QueryRow(ctx, `SELECT coalesce(shobj_description(d.oid, 'pg_database'), ''), to_regclass('agents') IS NOT NULL
FROM pg_database d WHERE d.datname = current_database()`).Scan(&mark, &tables)
	var held bool
	if err == nil && tables {
		err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agents)`).Scan(&held)
	}
	if err != nil {
		return false, fmt.Errorf("look for a seed in %s: %w", d.name, err)
	}
	empty := !held
	switch {
	case mark == seededComment(n):
		return true, nil
	case empty:
		return false, nil
	case strings.HasPrefix(mark, seededPrefix): // a comment of someone else's is no seed
		return false, fmt.Errorf("--keep-db %s holds another seed (%q), not %d listings: drop it (DROP DATABASE %s) or name another", d.name, mark, n, d.name)
	default:
		return false, fmt.Errorf("--keep-db %s holds listings but no finished seed (one stopped half way?): drop it (DROP DATABASE %s) or name another", d.name, d.name)
	}
}

// seededPrefix begins the comment on a kept Postgres database seeded by
// this tool (seededComment).
const seededPrefix = "agentsite-load: seeded "

// seededComment is the comment on a kept Postgres database seeded with n
// listings.
func seededComment(n int) string { return fmt.Sprintf("%s%d listings", seededPrefix, n) }

// markSeeded records in a kept store that n listings were seeded: a file
// in the data dir, a comment on the Postgres database.
func (d *database) markSeeded(ctx context.Context, n int) error {
	if !d.kept {
		return nil
	}
	if d.engine != "postgres" {
		return os.WriteFile(filepath.Join(d.dataDir, seededMark), []byte(strconv.Itoa(n)+"\n"), 0o600)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", d.name, err)
	}
	defer conn.Close(context.Background())
	// The comment is built from a number: nothing to quote but the name.
	if _, err := conn.Exec(ctx, "COMMENT ON DATABASE "+pgx.Identifier{d.name}.Sanitize()+" IS '"+seededComment(n)+"'"); err != nil {
		return fmt.Errorf("mark %s seeded: %w", d.name, err)
	}
	return nil
}

// withDatabase returns the admin URL with its database name replaced.
func withDatabase(adminURL, name string) (string, error) {
	u, err := url.Parse(adminURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("--postgres-url %q must be a postgres:// URL", adminURL)
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// drop removes the temporary Postgres database, forcing out any session the
// server left behind. It runs on a fresh context so it also works after
// Ctrl-C. (The SQLite file goes with the temp dir.)
func (d *database) drop(progress func(string, ...any)) {
	if d.engine != "postgres" {
		return
	}
	if d.kept {
		progress("kept database %s (--keep-db); drop it with DROP DATABASE %s", d.name, d.name)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := postgres.DropDatabase(ctx, d.adminURL, d.name); err != nil {
		progress("warning: %v", err)
		return
	}
	progress("dropped database %s", d.name)
}

// settleTimeout bounds the VACUUM ANALYZE of settle: at 1M listings on a
// loaded machine it is minutes (the GIN pending lists of four indexes).
const settleTimeout = 30 * time.Minute

// settle brings a freshly seeded Postgres database to the state a live node
// is in a minute later, once autovacuum has run: VACUUM ANALYZE flushes the
// GIN pending list of the text-search index and gives the planner
// statistics. (The SQLite store runs PRAGMA optimize when it is closed.)
func (d *database) settle(ctx context.Context, progress func(string, ...any)) error {
	if d.engine != "postgres" {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", d.name, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE)"); err != nil {
		return fmt.Errorf("vacuum %s: %w", d.name, err)
	}
	progress("VACUUM ANALYZE (%.1fs)", time.Since(start).Seconds())
	return nil
}

// buildBinary builds ./cmd/agentsite into dir; it must run from the module
// root (as `make bench` does), otherwise pass --bin.
func buildBinary(ctx context.Context, dir string, progress func(string, ...any)) (string, error) {
	bin := filepath.Join(dir, "agentsite")
	start := time.Now()
	progress("building ./cmd/agentsite ...")
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(bctx, "go", "build", "-o", bin, "./cmd/agentsite")
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/agentsite (run from the repository root, or pass --bin): %w", err)
	}
	progress("built %s (%.1fs)", bin, time.Since(start).Seconds())
	return bin, nil
}
