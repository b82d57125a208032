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
	kept    bool   // dataDir is --data-dir's, kept after the run

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
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, err
	}
	name := "agentsite_load_" + hex.EncodeToString(rnd[:])
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
	if !created {
		return nil, fmt.Errorf("database %s already exists; the run needs a fresh one, try again", name)
	}
	progress("store: Postgres database %s", name)
	return &database{engine: "postgres", url: dbURL, dataDir: dataDir, adminURL: cfg.PostgresURL, name: name}, nil
}

// seededMark is the file in a kept --data-dir that says how many
// listings were seeded into it.
const seededMark = "agentsite-load-seeded"

// seeded tells whether the data dir is a kept one (--data-dir) already
// seeded with n listings.
func (d *database) seeded(n int) bool {
	if !d.kept {
		return false
	}
	b, err := os.ReadFile(filepath.Join(d.dataDir, seededMark))
	return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(n)
}

// markSeeded records in a kept data dir that n listings were seeded.
func (d *database) markSeeded(n int) error {
	if !d.kept {
		return nil
	}
	return os.WriteFile(filepath.Join(d.dataDir, seededMark), []byte(strconv.Itoa(n)+"\n"), 0o600)
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := postgres.DropDatabase(ctx, d.adminURL, d.name); err != nil {
		progress("warning: %v", err)
		return
	}
	progress("dropped database %s", d.name)
}

// settle brings a freshly seeded Postgres database to the state a live node
// is in a minute later, once autovacuum has run: VACUUM ANALYZE flushes the
// GIN pending list of the text-search index and gives the planner
// statistics. (The SQLite store runs PRAGMA optimize when it is closed.)
func (d *database) settle(ctx context.Context, progress func(string, ...any)) error {
	if d.engine != "postgres" {
		return nil
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
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
