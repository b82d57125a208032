// Package pgtest gives tests a fresh, migrated Postgres store in a few
// milliseconds: once per test process it creates and migrates a template
// database, then every Open clones it (CREATE DATABASE ... TEMPLATE) and
// drops the clone when the test ends.
//
// The server is AGENTSITE_TEST_POSTGRES_URL, default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable; the user must
// be allowed to create databases. Without a reachable server tests are
// skipped, loudly, except when CI=true, where they fail.
//
// A package using Open calls Main from its TestMain so the template is
// dropped at the end:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
)

// DefaultURL is the server tried when AGENTSITE_TEST_POSTGRES_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// adminTimeout bounds each CREATE/DROP DATABASE.
const adminTimeout = 30 * time.Second

var (
	// mu serializes clones: Postgres refuses to copy a template while
	// another session (another CREATE DATABASE included) uses it.
	mu sync.Mutex
	// template is the migrated template's name, "" until created.
	template string
	// setupErr is why the template could not be made; sticky, so a missing
	// server costs one connection attempt per process.
	setupErr  error
	setupDone bool
	warnOnce  sync.Once
)

// errUnreachable marks "no server to test against": a skip outside CI. Any
// other setup error (a broken migration, say) fails the test.
var errUnreachable = errors.New("POSTGRES NOT REACHABLE")

// ServerURL is the Postgres server the tests use.
func ServerURL() string {
	if u := os.Getenv("AGENTSITE_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// Main runs the tests, then drops the template database.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if template != "" {
		if err := dropDatabase(template); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: drop template database %s: %v\n", template, err)
		}
		template = ""
	}
	mu.Unlock()
	os.Exit(code)
}

// Open returns a store on a fresh clone of the migrated template, closed and
// dropped when tb ends.
func Open(tb testing.TB) *postgres.DB {
	tb.Helper()
	return OpenWith(tb, store.Options{})
}

// OpenWith is Open with a store deadline and metrics.
func OpenWith(tb testing.TB, opts store.Options) *postgres.DB {
	tb.Helper()
	u := NewDatabase(tb)
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	db, err := postgres.OpenWith(ctx, u, slog.New(slog.DiscardHandler), opts)
	if err != nil {
		tb.Fatalf("pgtest: open store: %v", err)
	}
	// Registered after NewDatabase's cleanup, so it runs first.
	tb.Cleanup(func() { db.Close() })
	return db
}

// NewDatabase creates a fresh clone of the migrated template and returns its
// URL, for tests that open it themselves. The clone is dropped (WITH FORCE)
// when tb ends.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	name, err := clone()
	switch {
	case errors.Is(err, errUnreachable) && os.Getenv("CI") == "true":
		tb.Fatalf("pgtest: %v (CI=true: a Postgres server is required)", err)
	case errors.Is(err, errUnreachable):
		tb.Skipf("pgtest: %v", err)
	case err != nil:
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if err := dropDatabase(name); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return DatabaseURL(name)
}

// clone makes the template if needed and copies it into a new database.
func clone() (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if !setupDone {
		setupDone = true
		template, setupErr = makeTemplate()
		if setupErr != nil {
			template = ""
		}
	}
	if setupErr != nil {
		return "", setupErr
	}
	name := uniqueName("agentsite_test")
	err := admin(func(ctx context.Context, conn *pgx.Conn) error {
		sql := "CREATE DATABASE " + ident(name) + " TEMPLATE " + ident(template)
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
		if err := markOwned(ctx, conn, name); err != nil {
			return err
		}
		// Test data is disposable: do not wait for the WAL flush on commit.
		_, err := conn.Exec(ctx, "ALTER DATABASE "+ident(name)+" SET synchronous_commit = off")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("clone template %s: %w", template, err)
	}
	return name, nil
}

// makeTemplate creates and migrates the process's template database, after
// dropping what killed test processes of this machine left behind.
func makeTemplate() (string, error) {
	name := uniqueName("agentsite_tmpl")
	err := admin(func(ctx context.Context, conn *pgx.Conn) error {
		reapOrphans(ctx, conn)
		if _, err := postgres.CreateDatabase(ctx, ServerURL(), name); err != nil {
			return err
		}
		return markOwned(ctx, conn, name)
	})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	db, err := postgres.Open(ctx, DatabaseURL(name), slog.New(slog.DiscardHandler))
	if err != nil {
		_ = dropDatabase(name)
		return "", fmt.Errorf("migrate template database %s: %w", name, err)
	}
	// Close before cloning: a template must have no open sessions.
	db.Close()
	return name, nil
}

// admin runs fn on a connection to the server's maintenance database. A
// connection failure is reported as the loud "not reachable" error.
func admin(fn func(ctx context.Context, conn *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
	defer ccancel()
	conn, err := pgx.Connect(cctx, ServerURL())
	if err != nil {
		err = fmt.Errorf("%w at %s: %v: skipping Postgres tests; "+
			"start one with `docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:17` "+
			"or set AGENTSITE_TEST_POSTGRES_URL — in CI this is a failure", errUnreachable, redact(ServerURL()), err)
		warnOnce.Do(func() { fmt.Fprintln(os.Stderr, "pgtest:", err) })
		return err
	}
	defer conn.Close(context.Background())
	return fn(ctx, conn)
}

func dropDatabase(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	return postgres.DropDatabase(ctx, ServerURL(), name)
}

// DatabaseURL is ServerURL pointed at database name.
func DatabaseURL(name string) string {
	base := ServerURL()
	if !strings.Contains(base, "://") {
		// keyword=value form: a later key overrides an earlier one.
		return base + " dbname=" + name
	}
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + name
	return u.String()
}

// owner is what markOwned writes in a database's comment: this host and
// process, so a later run on the same host can tell a database whose process
// died (killed, interrupted, or a package without Main) from one in use.
func owner() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("pgtest host=%s pid=%d", host, os.Getpid())
}

func markOwned(ctx context.Context, conn *pgx.Conn, name string) error {
	// COMMENT takes no bind parameters; the literal is quoted by pgx's own
	// sanitizer and holds only a host name and a number anyway.
	_, err := conn.Exec(ctx, "COMMENT ON DATABASE "+ident(name)+" IS "+quote(owner()))
	return err
}

// reapOrphans drops the test databases of dead processes of this host.
// Failures are ignored: it is housekeeping.
func reapOrphans(ctx context.Context, conn *pgx.Conn) {
	if runtime.GOOS == "windows" {
		return // no cheap "is pid alive" check
	}
	host, _ := os.Hostname()
	rows, err := conn.Query(ctx, `
SELECT datname, shobj_description(oid, 'pg_database') FROM pg_database
WHERE datname LIKE 'agentsite\_t%' AND shobj_description(oid, 'pg_database') LIKE 'pgtest %'`)
	if err != nil {
		return
	}
	var names, comments []string
	var name, comment string
	_, err = pgx.ForEachRow(rows, []any{&name, &comment}, func() error {
		names, comments = append(names, name), append(comments, comment)
		return nil
	})
	if err != nil {
		return
	}
	for i, name := range names {
		var h string
		var pid int
		if _, err := fmt.Sscanf(comments[i], "pgtest host=%s pid=%d", &h, &pid); err != nil || h != host || alive(pid) {
			continue
		}
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+ident(name)+" WITH (FORCE)")
	}
}

// alive reports whether process pid exists (signal 0 checks, sends nothing).
func alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func uniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s_%d_%s", prefix, os.Getpid(), hex.EncodeToString(b))
}

func ident(name string) string { return pgx.Identifier{name}.Sanitize() }

// redact hides a password in a URL before it is printed.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
