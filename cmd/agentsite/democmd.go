package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Demo defaults: `make demo` must work on a laptop with nothing but Go, and
// use the Postgres server CI has (127.0.0.1:5432, user postgres) when there.
const (
	demoDefaultPostgres = "postgres://postgres@127.0.0.1:5432/agentsite_demo?sslmode=disable"
	demoDefaultDB       = "agentsite_demo"
	demoStopTimeout     = 15 * time.Second // SIGTERM to SIGKILL; a node's own HTTP shutdown allows 10s
	demoPollEvery       = 100 * time.Millisecond
)

// demoConfig is every setting of `agentsite demo`. Unlike serve it reads
// flags only: a shell set up for a real node (AGENTSITE_DATABASE_URL, ...)
// must not leak into the demo planet.
type demoConfig struct {
	Dir           string
	BasePort      int
	PostgresURL   string
	Binary        string
	OperatorToken string
	StartTimeout  time.Duration
	SyncTimeout   time.Duration
	// StepPause is the planner's pause before each step (democmd_planner_serve.go).
	StepPause time.Duration
}

// demo runs a local planet of three nodes as child processes.
type demo struct {
	cfg    demoConfig
	out    io.Writer // progress and summary
	errOut io.Writer // warnings
	client *http.Client
	nodes  []*demoNode
	// plannerID is node-a's planner, once registered.
	plannerID string
}

// newDemo parses the demo's flags.
func newDemo(args []string, stdout, stderr io.Writer) (*demo, error) {
	var c demoConfig
	fs := flag.NewFlagSet("agentsite demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: agentsite demo [flags]\n\n"+
			"Starts a local planet of three nodes (child processes of this binary):\n"+
			"node-a on Postgres (embedded SQLite if Postgres is unreachable), node-b and\n"+
			"node-c on embedded SQLite, all on 127.0.0.1. Ctrl-C stops all three.\n\nflags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Dir, "dir", filepath.Join("data", "demo"), "directory for the nodes' data dirs (node-a, node-b, node-c) and logs (node-X.log)")
	fs.IntVar(&c.BasePort, "base-port", 8081, "HTTP port of node-a; node-b and node-c take the next two")
	fs.StringVar(&c.PostgresURL, "postgres-url", demoDefaultPostgres, "Postgres database for node-a, created if missing; empty: node-a uses SQLite too")
	fs.StringVar(&c.Binary, "binary", "", "agentsite binary to start the nodes with (default: this executable)")
	fs.StringVar(&c.OperatorToken, "operator-token", "", "operator token the nodes accept on their API (default: a random one, printed)")
	fs.DurationVar(&c.StartTimeout, "start-timeout", 60*time.Second, "how long each node may take to answer /readyz")
	fs.DurationVar(&c.SyncTimeout, "sync-timeout", 30*time.Second, "how long to wait for every portal to list every demo node's agent")
	fs.DurationVar(&c.StepPause, "step-pause", demoStepPause, "the planner's pause before each step, so the steps arrive one by one in the chat (0: none)")
	hintDurations(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; flags start with --", fs.Arg(0))
	}
	if c.BasePort < 1 || c.BasePort > 65535-len(demoSpecs)+1 {
		return nil, fmt.Errorf("--base-port %d must be between 1 and %d", c.BasePort, 65535-len(demoSpecs)+1)
	}
	if c.OperatorToken != "" && len(c.OperatorToken) < 16 {
		return nil, errors.New("--operator-token must be at least 16 characters; leave it empty for a random one")
	}
	if c.StartTimeout <= 0 || c.SyncTimeout <= 0 {
		return nil, errors.New("--start-timeout and --sync-timeout must be positive")
	}
	return &demo{cfg: c, out: stdout, errOut: stderr, client: &http.Client{Timeout: 5 * time.Second}}, nil
}

// runDemo is `agentsite demo`: it runs until ctx ends (Ctrl-C, SIGTERM) or a
// node dies, and always stops and waits for the nodes it started.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	d, err := newDemo(args, stdout, stderr)
	if err != nil {
		return err
	}
	return d.Run(ctx)
}

// progress prints one line of what the demo is doing.
func (d *demo) progress(format string, args ...any) {
	fmt.Fprintf(d.out, "demo: "+format+"\n", args...)
}

// warn prints something the user should act on; the demo carries on.
func (d *demo) warn(format string, args ...any) {
	fmt.Fprintf(d.errOut, "demo: WARNING: "+format+"\n", args...)
}

// Run starts the planet, prints the summary and waits; see runDemo.
func (d *demo) Run(ctx context.Context) (err error) {
	bin := d.cfg.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("find this executable to start the nodes (pass --binary): %w", err)
		}
	}
	token := d.cfg.OperatorToken
	if token == "" {
		b := make([]byte, 24)
		_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
		token = hex.EncodeToString(b)
	}
	if err := os.MkdirAll(d.cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("the demo directory: %w", err) // "mkdir DIR: why" already
	}
	if err := d.plan(ctx); err != nil {
		return err
	}
	defer func() {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			d.progress("interrupted while starting; stopping the nodes started so far")
			err = nil // Ctrl-C during start is a normal way to stop
		}
		if stopErr := d.stopAll(); err == nil {
			err = stopErr
		}
	}()

	start := time.Now()
	if err := d.startAll(ctx, bin, token); err != nil {
		return err
	}
	for _, n := range d.nodes {
		verb, id, err := d.ensureAgent(ctx, token, n, n.spec)
		if err != nil {
			return fmt.Errorf("%s: register %s: %w", n.name, n.spec.Name, err)
		}
		n.agentID = id
		d.progress("%s: %s %q (tags %s) through its API", n.name, verb, n.spec.Name, strings.Join(n.spec.Tags, ", "))
	}
	if err := d.waitMirrored(ctx); err != nil {
		return err
	}
	stopModel, err := d.startPlanner(ctx, token)
	if err != nil {
		return err
	}
	defer stopModel()
	d.printSummary(token, time.Since(start))

	// Run until asked to stop or until a node dies.
	anyExit := make(chan *demoNode, len(d.nodes))
	for _, n := range d.nodes {
		go func() {
			<-n.proc.Exited()
			anyExit <- n
		}()
	}
	select {
	case <-ctx.Done():
		d.progress("stopping the three nodes…")
		return nil
	case n := <-anyExit:
		return n.proc.Unexpected()
	}
}

// startAll starts node-a, then the others, which join through it: its
// full multiaddr comes from its own API.
func (d *demo) startAll(ctx context.Context, bin, token string) error {
	a := d.nodes[0]
	if err := d.startAndWait(ctx, bin, token, a, ""); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(d.nodes))
	for i, n := range d.nodes[1:] {
		wg.Go(func() { errs[i] = d.startAndWait(ctx, bin, token, n, a.p2pAddr) })
	}
	wg.Wait()
	return errors.Join(errs...)
}
