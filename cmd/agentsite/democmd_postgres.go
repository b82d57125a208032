package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentsite/agentsite/store/postgres"
)

// demoCreateTimeout bounds creating node-a's database, connection included.
const demoCreateTimeout = 30 * time.Second

// demoPostgres is where node-a's database lives.
type demoPostgres struct {
	url      string // the database, for the node
	adminURL string // the server's maintenance database, to create it from
	name     string // the database's name
	shown    string // url with any password redacted, for printing
}

// parseDemoPostgres reads --postgres-url, filling in the database name
// agentsite_demo when the URL names only a server.
func parseDemoPostgres(raw string) (demoPostgres, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return demoPostgres{}, fmt.Errorf("--postgres-url %q must look like postgres://user@host:5432/agentsite_demo", raw)
	}
	name := strings.Trim(u.Path, "/")
	if name == "" {
		name = demoDefaultDB
	}
	u.Path, u.RawPath = "/"+name, ""
	pg := demoPostgres{url: u.String(), name: name, shown: u.Redacted()}
	u.Path = "/postgres"
	pg.adminURL = u.String()
	return pg, nil
}

// planPostgres puts node a on its Postgres database, created if missing,
// or, when Postgres cannot be used, says why and leaves it on SQLite.
func (d *demo) planPostgres(ctx context.Context, a *demoNode) error {
	if d.cfg.PostgresURL == "" {
		d.progress("node-a: --postgres-url is empty; all three nodes use embedded SQLite")
		return nil
	}
	pg, err := parseDemoPostgres(d.cfg.PostgresURL)
	if err != nil {
		return err
	}
	d.progress("node-a: checking Postgres at %s …", pg.shown)
	cctx, cancel := context.WithTimeout(ctx, demoCreateTimeout)
	defer cancel()
	created, err := postgres.CreateDatabase(cctx, pg.adminURL, pg.name)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, postgres.ErrServerUnreachable) {
			d.warn("Postgres is UNREACHABLE at %s: %v", pg.shown, errors.Unwrap(err))
		} else {
			d.warn("cannot use Postgres at %s: %v", pg.shown, err)
		}
		d.warn("node-a falls back to embedded SQLite. Start Postgres (or fix --postgres-url) to run it on Postgres; --postgres-url='' silences this.")
		return nil
	}
	a.dbURL, a.engine = pg.url, "Postgres "+pg.name
	if created {
		d.progress("node-a: created database %s", pg.name)
	}
	return nil
}
