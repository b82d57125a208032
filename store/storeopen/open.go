// Package storeopen picks a store engine from a database URL. It lives
// apart from package store because the engines import store.
package storeopen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/sqlite"
)

// SQLiteFile is the embedded database's file name inside the data dir.
const SQLiteFile = "agentsite.db"

// Open opens and migrates the store named by url: postgres:// or
// postgresql:// for Postgres, sqlite:PATH for a SQLite file, and "" for
// embedded SQLite in dataDir. The store has no deadline and no metrics.
func Open(ctx context.Context, url, dataDir string, logger *slog.Logger) (store.Store, string, error) {
	return OpenWith(ctx, url, dataDir, logger, store.Options{})
}

// The engines a database URL names (Engine).
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// ErrScheme is Engine's answer for a URL of no engine's scheme.
var ErrScheme = errors.New("unsupported database URL scheme; use postgres://..., sqlite:PATH or leave it empty")

// Engine names the engine url opens (EngineSQLite for "" too), or
// ErrScheme: the one place that knows the schemes, so the config's check
// at start and Open agree.
func Engine(url string) (string, error) {
	switch {
	case url == "", strings.HasPrefix(url, "sqlite:"):
		return EngineSQLite, nil
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return EnginePostgres, nil
	}
	return "", ErrScheme
}

// OpenWith is Open with opts, the store deadline and metrics the engine
// applies to every call.
func OpenWith(ctx context.Context, url, dataDir string, logger *slog.Logger, opts store.Options) (store.Store, string, error) {
	engine, err := Engine(url)
	if err != nil {
		return nil, "", err
	}
	switch {
	case url == "":
		if err := os.MkdirAll(dataDir, 0o700); err != nil {
			return nil, "", fmt.Errorf("create data dir %s: %w", dataDir, err)
		}
		path := filepath.Join(dataDir, SQLiteFile)
		db, err := sqlite.OpenWith(ctx, path, logger, opts)
		if err != nil {
			return nil, "", fmt.Errorf("open embedded SQLite %s: %w", path, err)
		}
		return db, engine, nil
	case engine == EngineSQLite:
		path := strings.TrimPrefix(strings.TrimPrefix(url, "sqlite:"), "//")
		db, err := sqlite.OpenWith(ctx, path, logger, opts)
		if err != nil {
			return nil, "", fmt.Errorf("open SQLite %s: %w", path, err)
		}
		return db, engine, nil
	default:
		db, err := postgres.OpenWith(ctx, url, logger, opts)
		if err != nil {
			return nil, "", fmt.Errorf("open Postgres (check --database-url and that the server is running): %w", err)
		}
		return db, engine, nil
	}
}
