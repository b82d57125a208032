package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/golang-migrate/migrate/v4"
	migratesqlite "github.com/golang-migrate/migrate/v4/database/sqlite"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/agentsite/agentsite/migrations"
	"github.com/agentsite/agentsite/store"
)

// migrateUp applies the embedded migrations (migrations/sqlite) on a
// connection of its own. It refuses a database whose schema version is
// newer than any migration this binary carries, and one left dirty by a
// failed migration, with messages that say what to do.
func migrateUp(ctx context.Context, dsn string, logger *slog.Logger) (err error) {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	src, err := iofs.New(migrations.SQLite, "sqlite")
	if err != nil {
		return fmt.Errorf("sqlite: migrate: read embedded migrations: %w", err)
	}
	latest, err := latestVersion(src)
	if err != nil {
		src.Close()
		return fmt.Errorf("sqlite: migrate: %w", err)
	}

	conn, err := sql.Open("sqlite", dsn)
	if err != nil {
		src.Close()
		return fmt.Errorf("sqlite: migrate: open: %w", err)
	}
	// The migration driver closes conn with m.Close below.
	driver, err := migratesqlite.WithInstance(conn, &migratesqlite.Config{})
	if err != nil {
		src.Close()
		conn.Close()
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "sqlite", driver)
	if err != nil {
		src.Close()
		driver.Close()
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer func() {
		srcErr, dbErr := m.Close()
		if err == nil {
			err = errors.Join(srcErr, dbErr)
		}
	}()

	version, dirty, err := m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
		version = 0
	case err != nil:
		return fmt.Errorf("sqlite: migrate: read schema version: %w", err)
	}
	if dirty {
		return fmt.Errorf("sqlite: the database schema is dirty at version %d: a migration failed half-way; "+
			"restore the database file from a backup, or start with another --data-dir (this is a cache the network refills)", version)
	}
	if version > latest {
		return fmt.Errorf("%w: the database is at schema version %d, this binary knows up to version %d; "+
			"upgrade agentsite, or start with another --data-dir", store.ErrSchemaTooNew, version, latest)
	}
	if version == latest {
		return nil
	}
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("sqlite: migrate from version %d to %d: %w", version, latest, err)
	}
	logger.Info("sqlite: schema migrated", "from", version, "to", latest)
	return nil
}

// latestVersion is the highest migration version in src.
func latestVersion(src source.Driver) (uint, error) {
	v, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("no embedded migrations: %w", err)
	}
	for {
		next, err := src.Next(v)
		if errors.Is(err, fs.ErrNotExist) {
			return v, nil
		}
		if err != nil {
			return 0, fmt.Errorf("list embedded migrations: %w", err)
		}
		v = next
	}
}
