package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/golang-migrate/migrate/v4"
	migratepgx "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentsite/agentsite/migrations"
	"github.com/agentsite/agentsite/store"
)

// migrateUp applies the embedded migrations (migrations/postgres) over a
// connection of its own. golang-migrate takes an advisory lock, so nodes
// sharing a database can start together.
func migrateUp(ctx context.Context, cfg *pgx.ConnConfig, logger *slog.Logger) error {
	src, err := iofs.New(migrations.Postgres, "postgres")
	if err != nil {
		return fmt.Errorf("postgres: read embedded migrations: %w", err)
	}
	latest, err := latestVersion(src)
	if err != nil {
		src.Close()
		return err
	}

	sqlDB := stdlib.OpenDB(*cfg)
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		src.Close()
		return fmt.Errorf("postgres: connect for migrations: %w", err)
	}
	drv, err := migratepgx.WithInstance(sqlDB, &migratepgx.Config{})
	if err != nil {
		sqlDB.Close()
		src.Close()
		return fmt.Errorf("postgres: migration driver: %w", err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "pgx5", drv)
	if err != nil {
		drv.Close()
		src.Close()
		return fmt.Errorf("postgres: migrations: %w", err)
	}
	defer m.Close()

	current, dirty, err := m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
		current = 0
	case err != nil:
		return fmt.Errorf("postgres: read schema version: %w", err)
	case dirty:
		return fmt.Errorf("postgres: schema is dirty at version %d: that migration failed half-way; "+
			"repair the schema by hand, then mark it with `migrate -path migrations/postgres -database <url> force <version>`", current)
	case current > latest:
		return fmt.Errorf("%w: the database is at schema version %d but this binary only knows up to %d; "+
			"run a newer agentsite against this database, or point it at another one", store.ErrSchemaTooNew, current, latest)
	}
	if current == latest {
		return nil
	}

	// Stop between migrations if the caller gives up.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			m.GracefulStop <- true
		case <-done:
		}
	}()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("postgres: migrate from version %d to %d: %w", current, latest, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: migrate from version %d to %d: %w", current, latest, err)
	}
	logger.Info("postgres schema migrated", "from", current, "to", latest)
	return nil
}

// latestVersion is the highest migration version embedded in this binary.
func latestVersion(src source.Driver) (uint, error) {
	v, err := src.First()
	if err != nil {
		return 0, fmt.Errorf("postgres: no embedded migrations: %w", err)
	}
	for {
		next, err := src.Next(v)
		if errors.Is(err, fs.ErrNotExist) {
			return v, nil
		}
		if err != nil {
			return 0, fmt.Errorf("postgres: list embedded migrations: %w", err)
		}
		v = next
	}
}
