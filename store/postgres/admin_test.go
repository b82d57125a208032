package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// CreateDatabase creates once and then reports the database as there; a
// name that needs quoting is quoted; DropDatabase removes it.
func TestCreateAndDropDatabase(t *testing.T) {
	pgtest.NewDatabase(t) // skips (or fails in CI) without a server
	server := pgtest.ServerURL()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := `agentsite_admin "Test"; ` + hex.EncodeToString(b)
	ctx := t.Context()
	t.Cleanup(func() { _ = postgres.DropDatabase(context.Background(), server, name) })
	for i, want := range []bool{true, false} {
		created, err := postgres.CreateDatabase(ctx, server, name)
		if err != nil || created != want {
			t.Fatalf("CreateDatabase #%d = %v, %v; want %v", i+1, created, err, want)
		}
	}
	conn, err := pgx.Connect(ctx, pgtest.DatabaseURL(name))
	if err != nil {
		t.Fatalf("connect to the new database: %v", err)
	}
	conn.Close(ctx)
	if err := postgres.DropDatabase(ctx, server, name); err != nil {
		t.Fatal(err)
	}
	if err := postgres.DropDatabase(ctx, server, name); err != nil {
		t.Fatalf("dropping a missing database: %v", err)
	}
	if created, err := postgres.CreateDatabase(ctx, server, name); err != nil || !created {
		t.Fatalf("CreateDatabase after the drop = %v, %v", created, err)
	}
}

// Nothing listening is ErrServerUnreachable, so the demo can fall back to
// SQLite; a server that answers but refuses is not.
func TestCreateDatabaseUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, err = postgres.CreateDatabase(t.Context(), "postgres://postgres@"+addr+"/postgres?sslmode=disable", "x")
	if !errors.Is(err, postgres.ErrServerUnreachable) {
		t.Fatalf("err = %v, want ErrServerUnreachable", err)
	}

	pgtest.NewDatabase(t)
	_, err = postgres.CreateDatabase(t.Context(), pgtest.DatabaseURL("agentsite_no_such_maintenance_db"), "x")
	if err == nil || errors.Is(err, postgres.ErrServerUnreachable) {
		t.Fatalf("a server that refuses: err = %v, want a plain error", err)
	}
}
