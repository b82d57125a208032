package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/agentsite/agentsite/agent"
)

// adminConnectTimeout bounds the connection of CreateDatabase and
// DropDatabase when the URL sets no connect_timeout: a server that is down
// should be reported in seconds, so `agentsite demo` can fall back to SQLite.
const adminConnectTimeout = 5 * time.Second

// ErrServerUnreachable is a Postgres server that could not be reached at
// all (down, or the URL names the wrong host or port), as opposed to one
// that answered and refused. Callers test it with errors.Is.
var ErrServerUnreachable = agent.NewError(agent.KindUnavailable, agent.CodeStoreUnavailable,
	"The Postgres server could not be reached; start it, or check the host and port of the URL.")

// CreateDatabase creates the database name on the server serverURL points
// at, unless it exists; created reports whether it did. serverURL must name
// a database that exists (the maintenance database "postgres" usually):
// that is where the connection goes. Safe against a concurrent creator.
func CreateDatabase(ctx context.Context, serverURL, name string) (created bool, err error) {
	if name == "" {
		return false, errors.New("postgres: create database: empty name")
	}
	conn, err := adminConnect(ctx, serverURL)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return false, fmt.Errorf("postgres: look for database %s: %w", name, err)
	}
	if exists {
		return false, nil
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == pgerrcode.DuplicateDatabase {
		return false, nil // created by someone else in between
	}
	if err != nil {
		return false, fmt.Errorf("postgres: create database %s (may this user create databases?): %w", name, err)
	}
	return true, nil
}

// DropDatabase drops the database name if it exists, forcing out any
// session still connected to it (a server that was killed leaves some).
func DropDatabase(ctx context.Context, serverURL, name string) error {
	conn, err := adminConnect(ctx, serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("postgres: drop database %s: %w", name, err)
	}
	return nil
}

// adminConnect opens one connection to serverURL. A server that answers
// and refuses (a bad password, a missing database) is a plain error; no
// answer at all is ErrServerUnreachable.
func adminConnect(ctx context.Context, serverURL string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(serverURL)
	if err != nil {
		return nil, invalidURL(err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = adminConnectTimeout
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn, nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) || ctx.Err() != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", cfg.Host, err)
	}
	return nil, ErrServerUnreachable.Wrap(err)
}

// invalidURL is the error for a database URL pgx cannot parse. pgx's
// error quotes the URL, password redacted only on a best effort basis:
// keep just the reason.
func invalidURL(err error) error {
	reason := "malformed"
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) && pe.Unwrap() != nil {
		reason = pe.Unwrap().Error()
	}
	return fmt.Errorf("postgres: invalid database URL (%s); want postgres://user:pass@host:port/db?sslmode=...", reason)
}
