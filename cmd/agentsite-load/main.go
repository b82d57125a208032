// Command agentsite-load is the HTTP load test behind `make bench`: it seeds a
// fresh store (Postgres or SQLite) with realistic signed listings, starts the
// real agentsite binary on it, and drives GET /api/v1/agents?q= with vegeta
// at fixed concurrency levels, all on 127.0.0.1.
//
// Every step is bounded in time and count, shows progress on stderr, and
// cleans up after itself (temporary database, data dir, server process), also
// on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// defaultQueries are the search terms rotated through by default: frequent
// and rare domains, one- and two-word queries, and one that matches nothing,
// so the result counts vary the way a real search box's do.
var defaultQueries = []string{
	"weather", "translate", "code review", "math", "finance", "travel",
	"summarize", "python", "stock", "recipe", "legal contract", "kubernetes",
	"astronomy", "assistant", "spanish", "forecast", "invoice", "quantum chess",
}

// config is every flag of the tool.
type config struct {
	Store       string
	Listings    int
	Concurrency []int
	Duration    time.Duration
	Warmup      time.Duration
	Timeout     time.Duration
	Bin         string
	Queries     []string
	Path        string
	// Body, when set, makes every request a POST of it as JSON, %s
	// replaced by the term as a JSON string's inside (ARD's POST /search).
	Body        string
	PostgresURL string
	Out         string
	Settle      bool
	// Mix is "fixed" (rotate Queries) or "distinct" (Distinct queries from
	// the catalogue's vocabulary, each sent once: every one misses the
	// read cache).
	Mix      string
	Distinct int
	// Ceiling also runs the same requests against a bare net/http server
	// sending the bytes agentsite sent, and reports the ratio.
	Ceiling bool
	// Replicas is how many agentsite processes serve the run, portal
	// replicas on one Postgres database; requests go round-robin.
	Replicas int
	// DataDir, when set (SQLite only), is where the store is seeded and
	// kept; a later run with the same --listings reuses it (seeding 1M
	// listings takes minutes).
	DataDir string
	// KeepDB, when set (Postgres only), is the database the store is
	// seeded in and kept; a later run with the same --listings reuses it
	// (seeding 1M listings takes minutes).
	KeepDB string
	// QuotaCounts is where the Sink's quota counts come from while
	// seeding: quotaFromStore or quotaFromSeeder (talliedStore).
	QuotaCounts string
	// SeedOnly stops after seeding (with DataDir or KeepDB: to seed once,
	// then run).
	SeedOnly bool
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		switch {
		case errors.Is(err, flag.ErrHelp):
			stop()
			os.Exit(0)
		case ctx.Err() != nil:
			fmt.Fprintln(os.Stderr, "agentsite-load: interrupted; cleaned up")
		default:
			fmt.Fprintln(os.Stderr, "agentsite-load:", err)
		}
		stop()
		os.Exit(1)
	}
}

// parseFlags fills a config from args and checks it.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("agentsite-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Store, "store", "postgres", "store engine: postgres or sqlite")
	fs.IntVar(&c.Listings, "listings", 10000, "number of listings to seed")
	conc := fs.String("concurrency", "5,10,20", "comma-separated concurrency levels (concurrent clients)")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "length of the timed run at each concurrency")
	fs.DurationVar(&c.Warmup, "warmup", time.Second, "warm-up before each timed run (not measured)")
	fs.DurationVar(&c.Timeout, "timeout", 5*time.Second, "timeout of one request")
	fs.StringVar(&c.Bin, "bin", "", "path to the agentsite binary (default: go build ./cmd/agentsite into a temp dir)")
	queries := fs.String("queries", strings.Join(defaultQueries, ","), "comma-separated search terms to rotate through")
	fs.StringVar(&c.Path, "path", "/api/v1/agents?q=%s&limit=20", "request path; %s is replaced by the query-escaped term")
	fs.StringVar(&c.Body, "body", "", "POST this JSON body instead of a GET (%s: the term, JSON-escaped), e.g. --path /ard/search --body '{\"query\":{\"text\":\"%s\"},\"pageSize\":20}'")
	fs.StringVar(&c.PostgresURL, "postgres-url", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "admin URL used to create and drop the temporary database")
	fs.BoolVar(&c.Settle, "settle", true, "after seeding, VACUUM ANALYZE the Postgres database as autovacuum would on a live node")
	fs.StringVar(&c.Out, "out", "", "markdown file to append the results to (optional)")
	fs.StringVar(&c.Mix, "mix", "fixed", "query mix: fixed (rotate --queries) or distinct (--distinct one- and two-word queries from the catalogue's vocabulary, none sent twice)")
	fs.IntVar(&c.Distinct, "distinct", 100_000, "number of distinct queries of --mix distinct (at least 2000; the run wraps around if it sends more)")
	fs.BoolVar(&c.Ceiling, "ceiling", false, "also measure a bare net/http server sending the same bytes (the ceiling of this machine), and report the ratio")
	fs.IntVar(&c.Replicas, "replicas", 1, fmt.Sprintf("number of agentsite processes serving the run (1..%d): portal replicas on one database, each with its own data dir and port, requests round-robin; more than 1 needs --store postgres", maxReplicas))
	fs.StringVar(&c.DataDir, "data-dir", "", "SQLite only: seed into this directory and keep it; a later run with the same --listings reuses it instead of seeding again")
	fs.StringVar(&c.KeepDB, "keep-db", "", "Postgres only: seed into this database (created if missing) and keep it; a later run with the same --listings reuses it instead of seeding again")
	fs.StringVar(&c.QuotaCounts, "quota-counts", quotaFromStore, "while seeding, where the Sink's per-publisher quota counts come from: store (counted by the store every 10 s, as on a node) or seeder (the seeder's tally of what it wrote; on Postgres the store's counts make a 1M seed slow down to ~150 listings/s by 200k)")
	fs.BoolVar(&c.SeedOnly, "seed-only", false, "stop after seeding (with --data-dir or --keep-db: seed once, run later)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; flags start with --", fs.Arg(0))
	}
	var errs []error
	if c.Store != "postgres" && c.Store != "sqlite" {
		errs = append(errs, fmt.Errorf("--store %q must be postgres or sqlite", c.Store))
	}
	if c.Listings < 1 || c.Listings > 1_000_000 {
		errs = append(errs, errors.New("--listings must be between 1 and 1000000"))
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, fmt.Errorf("--concurrency %q: each level must be an integer 1..1000", s))
			continue
		}
		c.Concurrency = append(c.Concurrency, n)
	}
	if c.Duration < 100*time.Millisecond || c.Duration > time.Hour {
		errs = append(errs, errors.New("--duration must be between 100ms and 1h"))
	}
	if c.Warmup < 0 || c.Warmup > time.Minute {
		errs = append(errs, errors.New("--warmup must be between 0 and 1m"))
	}
	if c.Timeout <= 0 || c.Timeout > time.Minute {
		errs = append(errs, errors.New("--timeout must be between 0 and 1m"))
	}
	for _, q := range strings.Split(*queries, ",") {
		if q = strings.TrimSpace(q); q != "" {
			c.Queries = append(c.Queries, q)
		}
	}
	if len(c.Queries) == 0 {
		errs = append(errs, errors.New("--queries must name at least one search term"))
	}
	if c.Mix != "fixed" && c.Mix != "distinct" {
		errs = append(errs, fmt.Errorf("--mix %q must be fixed or distinct", c.Mix))
	}
	if c.Distinct < 2000 || c.Distinct > 1_000_000 {
		errs = append(errs, errors.New("--distinct must be between 2000 and 1000000"))
	}
	if c.Replicas < 1 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("--replicas must be between 1 and %d", maxReplicas))
	} else if c.Replicas > 1 && c.Store != "postgres" {
		errs = append(errs, fmt.Errorf("--replicas %d needs --store postgres: replicas share one Postgres database, and a SQLite store belongs to one process", c.Replicas))
	}
	if c.DataDir != "" && c.Store != "sqlite" {
		errs = append(errs, errors.New("--data-dir keeps a SQLite store: give it with --store sqlite"))
	}
	if c.QuotaCounts != quotaFromStore && c.QuotaCounts != quotaFromSeeder {
		errs = append(errs, fmt.Errorf("--quota-counts %q must be %s or %s", c.QuotaCounts, quotaFromStore, quotaFromSeeder))
	}
	if c.KeepDB != "" && c.Store != "postgres" {
		errs = append(errs, errors.New("--keep-db keeps a Postgres database: give it with --store postgres"))
	}
	if c.Body != "" {
		if strings.Count(c.Body, "%s") != 1 || !strings.HasPrefix(c.Path, "/") {
			errs = append(errs, errors.New("--body must contain %s exactly once, and --path start with /"))
		}
		if c.Ceiling {
			errs = append(errs, errors.New("--ceiling measures GETs only; leave it out with --body"))
		}
	} else if strings.Count(c.Path, "%s") != 1 || !strings.HasPrefix(c.Path, "/") {
		errs = append(errs, errors.New("--path must start with / and contain %s exactly once"))
	}
	return c, errors.Join(errs...)
}

// run is the whole tool: seed, serve, attack, report, clean up.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	busy := cpuBusy(time.Second) // before this tool adds any load of its own
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	progress := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }

	tmp, err := os.MkdirTemp("", "agentsite-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	bin := cfg.Bin
	if bin == "" && !cfg.SeedOnly { // no server to run
		if bin, err = buildBinary(ctx, tmp, progress); err != nil {
			return err
		}
	}

	db, err := newDatabase(ctx, cfg, tmp, progress)
	if err != nil {
		return err
	}
	defer db.drop(progress)

	if ok, err := db.seeded(ctx, cfg.Listings); err != nil {
		return err
	} else if ok {
		progress("%s already holds %d seeded listings: not seeding again", db.where(), cfg.Listings)
	} else {
		if err := seed(ctx, db, cfg.Listings, cfg.QuotaCounts, logger, progress); err != nil {
			return err
		}
		if err := db.markSeeded(ctx, cfg.Listings); err != nil {
			return err
		}
	}
	if cfg.SeedOnly {
		return nil
	}

	if cfg.Settle {
		if err := db.settle(ctx, progress); err != nil {
			return err
		}
	}

	srvs, err := startServers(ctx, bin, db, cfg.Replicas, tmp, progress)
	if err != nil {
		return err
	}
	defer stopServers(srvs, progress)
	bases := baseURLs(srvs)

	if cfg.Mix == "distinct" {
		cfg.Queries = distinctQueries(cfg.Distinct, cfg.Listings)
		progress("%d distinct queries from the catalogue's vocabulary, e.g. %q", len(cfg.Queries), cfg.Queries[:min(8, len(cfg.Queries))])
	}
	for _, base := range bases {
		if err := preflight(ctx, base, cfg, progress); err != nil {
			return err
		}
	}
	if len(bases) > 1 {
		progress("requests go round-robin to %d replicas: %s", len(bases), strings.Join(bases, ", "))
	}
	sent := &atomic.Uint64{}
	rows, err := attackAll(ctx, bases, cfg, sent, &cpuMeter{servers: srvs}, progress)
	if err != nil {
		return err
	}
	var mem []memory
	for _, s := range srvs {
		rss, peak := s.memory()
		mem = append(mem, memory{Name: s.name, RSS: rss, Peak: peak})
	}
	var ceiling []row
	if cfg.Ceiling {
		if ceiling, err = runCeiling(ctx, bases[0], cfg, progress); err != nil {
			return err
		}
	}
	rep := &report{
		Mix:      cfg.Mix,
		Queries:  len(cfg.Queries),
		Sent:     sent.Load(),
		Ceiling:  ceiling,
		Store:    cfg.Store,
		Replicas: len(srvs),
		Listings: cfg.Listings,
		Settled:  cfg.Settle || cfg.Store == "sqlite",
		Busy:     busy,
		Path:     cfg.Path,
		Body:     cfg.Body,
		Duration: cfg.Duration,
		CPUs:     runtime.NumCPU(),
		Rows:     rows,
		Date:     time.Now(),
	}
	rep.Memory = mem
	if err := rep.write(stdout); err != nil {
		return err
	}
	if cfg.Out != "" {
		if err := rep.appendTo(cfg.Out); err != nil {
			return err
		}
		progress("appended results to %s", cfg.Out)
	}
	return nil
}
