package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// The demo starts three real processes, waits until every portal lists the
// agent each node registered, and on cancel stops and reaps all three.
func TestDemoPlanet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts three node processes")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is needed to build the binary the demo starts")
	}
	bin := filepath.Join(t.TempDir(), "agentsite")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	pgURL := demoTestDatabaseURL(t)
	base := demoFreePorts(t, len(demoSpecs))
	dir := t.TempDir()

	var out lockedBuffer
	d, err := newDemo([]string{
		"--binary", bin, "--dir", dir, "--base-port", fmt.Sprint(base),
		"--postgres-url", pgURL, "--start-timeout", "60s", "--step-pause", "0",
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	want := map[string]bool{"translator": true, "weather": true, "haiku": true}
	for i := range demoSpecs {
		portal := fmt.Sprintf("http://127.0.0.1:%d", base+i)
		waitfor.Until(t, 90*time.Second, portal+" to list the three demo nodes' agents", func() bool {
			select {
			case err := <-done:
				t.Fatalf("demo ended early: %v\n%s", err, out.String())
			default:
			}
			hosts := map[string]string{}
			for _, a := range demoTestAgents(portal) {
				if want[a.Name] {
					hosts[a.Name] = a.HostPeerID
				}
			}
			return len(hosts) == 3 && hosts["translator"] != hosts["weather"] &&
				hosts["weather"] != hosts["haiku"] && hosts["translator"] != hosts["haiku"]
		})
	}
	waitfor.Until(t, 30*time.Second, "the summary", func() bool {
		return strings.Contains(out.String(), "Press Ctrl-C")
	})
	checkDemoPlanner(t, base)
	checkDemoNames(t, base)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo: %v\n%s", err, out.String())
		}
	case <-time.After(2 * demoStopTimeout):
		t.Fatalf("demo did not stop\n%s", out.String())
	}
	for i, n := range d.nodes {
		if err := n.proc.Err(); err != nil {
			t.Errorf("%s: ended with %v, want a clean exit", n.name, err)
		}
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", base+i), time.Second); err == nil {
			c.Close()
			t.Errorf("%s: port still open after the demo stopped", n.name)
		}
	}
	got := out.String()
	for _, s := range []string{
		fmt.Sprintf("http://127.0.0.1:%d", base), "--bootstrap /ip4/127.0.0.1/tcp/",
		"node-a stopped", "node-b stopped", "node-c stopped",
		"open the planner's chat on node-a", demoPlannerModel,
	} {
		if !strings.Contains(got, s) {
			t.Errorf("output lacks %q:\n%s", s, got)
		}
	}
	if demoPGReachable(pgURL) && !strings.Contains(got, "created database") {
		t.Errorf("Postgres is up but node-a did not get its own database:\n%s", got)
	}
	t.Logf("demo output:\n%s", got)
}

func TestDemoPostgresURL(t *testing.T) {
	for _, c := range []struct{ in, url, admin, name, shown string }{
		{"postgres://postgres@127.0.0.1:5432", "postgres://postgres@127.0.0.1:5432/agentsite_demo",
			"postgres://postgres@127.0.0.1:5432/postgres", "agentsite_demo", "postgres://postgres@127.0.0.1:5432/agentsite_demo"},
		{"postgres://u:secret@db:5432/mine?sslmode=disable", "postgres://u:secret@db:5432/mine?sslmode=disable",
			"postgres://u:secret@db:5432/postgres?sslmode=disable", "mine", "postgres://u:xxxxx@db:5432/mine?sslmode=disable"},
	} {
		pg, err := parseDemoPostgres(c.in)
		if err != nil || pg != (demoPostgres{url: c.url, adminURL: c.admin, name: c.name, shown: c.shown}) {
			t.Errorf("parseDemoPostgres(%q) = %+v, %v", c.in, pg, err)
		}
	}
	for _, bad := range []string{"mysql://x/y", "postgres:///nohost", "::"} {
		if _, err := parseDemoPostgres(bad); err == nil {
			t.Errorf("parseDemoPostgres(%q) accepted", bad)
		}
	}
}

// An unreachable Postgres server is reported as such, quickly, and node-a
// falls back to SQLite instead of the demo failing.
func TestDemoFallsBackToSQLite(t *testing.T) {
	const addr = "127.0.0.1:1" // tcpmux: nothing listens there
	var out lockedBuffer
	d, err := newDemo([]string{
		"--dir", t.TempDir(), "--base-port", fmt.Sprint(demoFreePorts(t, len(demoSpecs))),
		"--postgres-url", "postgres://postgres@" + addr + "/agentsite_demo?sslmode=disable",
	}, &out, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.plan(t.Context()); err != nil {
		t.Fatalf("plan: %v", err)
	}
	if a := d.nodes[0]; a.dbURL != "" || a.engine != "SQLite" {
		t.Errorf("node-a = %q on %q, want SQLite", a.engine, a.dbURL)
	}
	if !strings.Contains(out.String(), "Postgres is UNREACHABLE at postgres://postgres@"+addr) ||
		!strings.Contains(out.String(), "node-a falls back to embedded SQLite") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestDemoFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--base-port", "0"}, {"--base-port", "65535"}, {"--operator-token", "short"},
		{"--start-timeout", "0s"}, {"stray"},
	} {
		if _, err := newDemo(args, io.Discard, io.Discard); err == nil {
			t.Errorf("newDemo(%q) accepted", args)
		}
	}
	d, err := newDemo(nil, io.Discard, io.Discard)
	if err != nil || d.cfg.BasePort != 8081 || d.cfg.Dir != filepath.Join("data", "demo") || d.cfg.PostgresURL != demoDefaultPostgres {
		t.Errorf("defaults = %+v, %v", d, err)
	}
}

// demoTestDatabaseURL names a database of its own on the test Postgres
// server, dropped when the test ends. The demo creates it; if the server is
// down the demo falls back to SQLite, which the test accepts.
func demoTestDatabaseURL(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "agentsite_demo_test_" + hex.EncodeToString(b)
	u, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dbURL := u.String()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := postgres.DropDatabase(ctx, pgtest.ServerURL(), name)
		if err != nil && !errors.Is(err, postgres.ErrServerUnreachable) {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return dbURL
}

// demoPGReachable reports whether the server of dbURL accepts connections.
func demoPGReachable(dbURL string) bool {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return false
	}
	cfg.Database = "postgres"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return false
	}
	conn.Close(ctx)
	return true
}

// demoFreePorts finds n consecutive free TCP ports on 127.0.0.1 and returns
// the first. They are free when checked; the demo binds them right after.
func demoFreePorts(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		first, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := first.Addr().(*net.TCPAddr).Port
		held := []net.Listener{first}
		ok := base+n-1 <= 65535
		for i := 1; ok && i < n; i++ {
			ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if err != nil {
				ok = false
				break
			}
			held = append(held, ln)
		}
		for _, ln := range held {
			ln.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no run of %d free ports found", n)
	return 0
}

// demoTestAgents lists every agent a portal's API shows; nil on error (the
// caller polls).
func demoTestAgents(portal string) []apiwire.Agent {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(portal + "/api/v1/agents?status=all&limit=100")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var page apiwire.AgentList
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&page) != nil {
		return nil
	}
	return page.Agents
}
