package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
}

// demoAgentSpec is the extra agent one demo node hosts, so each portal shows
// listings that can only have come from its peers.
type demoAgentSpec struct {
	Name, DisplayName, Description, Example string
	Tags                                    []string
}

// demoSpecs are the three nodes of the local planet, in start order; the
// first is the one the others bootstrap through.
var demoSpecs = []struct {
	name  string
	agent demoAgentSpec
}{
	{"node-a", demoAgentSpec{
		Name: "translator", DisplayName: "Translator",
		Description: "Hosted by demo node A. Runs the builtin echo backend, so it repeats what you send; open it on node B or C to see a listing travel the network.",
		Tags:        []string{"language", "translation", "demo"}, Example: "bonjour le monde",
	}},
	{"node-b", demoAgentSpec{
		Name: "weather", DisplayName: "Weather",
		Description: "Hosted by demo node B. Runs the builtin echo backend; chat with it from node A's portal and the message is routed to node B.",
		Tags:        []string{"weather", "forecast", "demo"}, Example: "rain in Paris tomorrow?",
	}},
	{"node-c", demoAgentSpec{
		Name: "haiku", DisplayName: "Haiku",
		Description: "Hosted by demo node C. Runs the builtin echo backend: send it seventeen syllables and it sends them back.",
		Tags:        []string{"poetry", "haiku", "demo"}, Example: "an old silent pond",
	}},
}

// demoNode is one child `agentsite serve` process.
type demoNode struct {
	name     string
	spec     demoAgentSpec
	dataDir  string
	logPath  string
	httpAddr string
	dbURL    string // empty: embedded SQLite
	engine   string // what the summary says about the store

	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{} // closed once the process has exited
	waitErr error         // valid once exited is closed

	peerID  string
	p2pAddr string // the multiaddr others bootstrap through
	agentID string
}

// baseURL is the node's portal, e.g. http://127.0.0.1:8081.
func (n *demoNode) baseURL() string { return "http://" + n.httpAddr }

// demo runs a local planet of three nodes as child processes.
type demo struct {
	cfg    demoConfig
	out    io.Writer // progress and summary
	errOut io.Writer // warnings
	client *http.Client
	nodes  []*demoNode
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
		return fmt.Errorf("create %s: %w", d.cfg.Dir, err)
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
	a := d.nodes[0]
	if err := d.startAndWait(ctx, bin, token, a, ""); err != nil {
		return err
	}
	// The others join through A: its full multiaddr comes from its own API.
	var wg sync.WaitGroup
	errs := make([]error, len(d.nodes))
	for i, n := range d.nodes[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.startAndWait(ctx, bin, token, n, a.p2pAddr)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, n := range d.nodes {
		verb, err := d.ensureAgent(ctx, token, n)
		if err != nil {
			return fmt.Errorf("%s: register %s: %w", n.name, n.spec.Name, err)
		}
		d.progress("%s: %s %q (tags %s) through its API", n.name, verb, n.spec.Name, strings.Join(n.spec.Tags, ", "))
	}
	if err := d.waitMirrored(ctx); err != nil {
		return err
	}
	d.printSummary(token, time.Since(start))

	// Run until asked to stop or until a node dies.
	anyExit := make(chan *demoNode, len(d.nodes))
	for _, n := range d.nodes {
		go func() {
			<-n.exited
			anyExit <- n
		}()
	}
	select {
	case <-ctx.Done():
		d.progress("stopping the three nodes…")
		return nil
	case n := <-anyExit:
		return fmt.Errorf("%s exited unexpectedly (%v); see %s", n.name, n.waitErr, n.logPath)
	}
}

// plan lays out the three nodes: ports, data dirs, logs, and node-a's store
// (creating the Postgres database if needed, or falling back to SQLite).
func (d *demo) plan(ctx context.Context) error {
	for i, s := range demoSpecs {
		n := &demoNode{
			name:     s.name,
			spec:     s.agent,
			dataDir:  filepath.Join(d.cfg.Dir, s.name),
			logPath:  filepath.Join(d.cfg.Dir, s.name+".log"),
			httpAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(d.cfg.BasePort+i)),
			engine:   "SQLite",
			exited:   make(chan struct{}),
		}
		// A busy port would have /readyz answered by someone else's server.
		ln, err := net.Listen("tcp", n.httpAddr)
		if err != nil {
			return fmt.Errorf("%s: port %s is taken (another demo or node running?); choose other ports with --base-port: %w", s.name, n.httpAddr, err)
		}
		_ = ln.Close()
		d.nodes = append(d.nodes, n)
	}
	a := d.nodes[0]
	if d.cfg.PostgresURL == "" {
		d.progress("node-a: --postgres-url is empty; all three nodes use embedded SQLite")
		return nil
	}
	dbURL, shown, err := demoDatabaseURL(d.cfg.PostgresURL)
	if err != nil {
		return err
	}
	d.progress("node-a: checking Postgres at %s …", shown)
	created, err := ensureDemoDatabase(ctx, dbURL)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, errPostgresUnreachable) {
			d.warn("Postgres is UNREACHABLE at %s: %v", shown, errors.Unwrap(err))
		} else {
			d.warn("cannot use Postgres at %s: %v", shown, err)
		}
		d.warn("node-a falls back to embedded SQLite. Start Postgres (or fix --postgres-url) to run it on Postgres; --postgres-url='' silences this.")
		return nil
	}
	a.dbURL = dbURL
	name, _ := demoDBName(dbURL)
	a.engine = "Postgres " + name
	if created {
		d.progress("node-a: created database %s", name)
	}
	return nil
}

// demoDatabaseURL fills in the database name agentsite_demo when the URL
// names only a server, and returns the URL with any password redacted for
// printing.
func demoDatabaseURL(raw string) (full, shown string, err error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return "", "", fmt.Errorf("--postgres-url %q must look like postgres://user@host:5432/agentsite_demo", raw)
	}
	if strings.Trim(u.Path, "/") == "" {
		u.Path = "/" + demoDefaultDB
	}
	return u.String(), u.Redacted(), nil
}

// demoDBName is the database named in a Postgres URL.
func demoDBName(dbURL string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	return strings.Trim(u.Path, "/"), nil
}

// errPostgresUnreachable marks a failed connection, as opposed to a server
// that answers but refuses (permissions, a bad database name).
var errPostgresUnreachable = errors.New("postgres unreachable")

// ensureDemoDatabase creates the database named in dbURL if it does not
// exist, connecting to the server's "postgres" database to do so. created
// reports whether it did.
func ensureDemoDatabase(ctx context.Context, dbURL string) (created bool, err error) {
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		return false, fmt.Errorf("parse --postgres-url: %w", err)
	}
	name := cfg.Database
	admin := cfg.Copy()
	admin.Database = "postgres"
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errPostgresUnreachable, err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return false, fmt.Errorf("look for database %s: %w", name, err)
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
		return false, fmt.Errorf("create database %s: %w", name, err)
	}
	return true, nil
}

// startAndWait starts one node, logging to its file, and waits until it
// answers /readyz; then it reads the node's peer ID and multiaddr.
func (d *demo) startAndWait(ctx context.Context, bin, token string, n *demoNode, bootstrap string) error {
	what := n.engine
	if bootstrap != "" {
		what += ", joining through node-a"
	}
	d.progress("%s: starting on %s (%s) …", n.name, n.baseURL(), what)
	if err := d.start(bin, token, n, bootstrap); err != nil {
		return err
	}
	began := time.Now()
	if err := d.waitReady(ctx, n); err != nil {
		return err
	}
	var info struct {
		PeerID string   `json:"peer_id"`
		Addrs  []string `json:"addrs"`
	}
	if err := d.getJSON(ctx, n.baseURL()+"/api/v1/node", &info); err != nil {
		return fmt.Errorf("%s: read /api/v1/node: %w", n.name, err)
	}
	if len(info.Addrs) == 0 {
		return fmt.Errorf("%s: /api/v1/node lists no p2p addresses; see %s", n.name, n.logPath)
	}
	n.peerID, n.p2pAddr = info.PeerID, info.Addrs[0]
	for _, a := range info.Addrs {
		if strings.Contains(a, "/tcp/") {
			n.p2pAddr = a
			break
		}
	}
	d.progress("%s: ready in %.1fs, peer %s", n.name, time.Since(began).Seconds(), n.peerID)
	return nil
}

// start launches `agentsite serve` for n. The operator token and database
// URL travel in the environment, not argv, so `ps` does not show them.
func (d *demo) start(bin, token string, n *demoNode, bootstrap string) error {
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("%s: open log: %w", n.name, err)
	}
	args := []string{"serve",
		"--data-dir", n.dataDir,
		"--http-addr", n.httpAddr,
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--demo-agents=true",
		"--log-level", "info",
	}
	if bootstrap != "" {
		args = append(args, "--bootstrap", bootstrap)
	}
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTSITE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, EnvName("operator-token")+"="+token)
	if n.dbURL != "" {
		cmd.Env = append(cmd.Env, EnvName("database-url")+"="+n.dbURL)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("%s: start %s: %w", n.name, bin, err)
	}
	n.cmd, n.logFile = cmd, logFile
	go func() {
		n.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(n.exited)
	}()
	return nil
}

// waitReady polls /readyz until 200, the process exits, ctx ends or the
// start timeout passes.
func (d *demo) waitReady(ctx context.Context, n *demoNode) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	last := "no answer yet"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, n.baseURL()+"/readyz", nil)
		if resp, err := d.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-n.exited:
			return fmt.Errorf("%s exited before it was ready (%v); see %s", n.name, n.waitErr, n.logPath)
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%s not ready after %s (last /readyz: %s); see %s", n.name, d.cfg.StartTimeout, last, n.logPath)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// demoListing is the part of an API Agent the demo reads.
type demoListing struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Local      bool   `json:"local"`
	HostPeerID string `json:"host_peer_id"`
}

// listAgents pages through every listing a node's API shows.
func (d *demo) listAgents(ctx context.Context, n *demoNode) ([]demoListing, error) {
	var all []demoListing
	cursor := ""
	for range 1000 {
		var page struct {
			Agents     []demoListing `json:"agents"`
			NextCursor string        `json:"next_cursor"`
		}
		u := n.baseURL() + "/api/v1/agents?status=all&limit=100&cursor=" + url.QueryEscape(cursor)
		if err := d.getJSON(ctx, u, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Agents...)
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	return all, nil
}

// ensureAgent registers the node's extra agent through its API, or, when a
// previous demo run left it there, publishes it afresh with PUT. verb says
// which it did.
func (d *demo) ensureAgent(ctx context.Context, token string, n *demoNode) (verb string, err error) {
	body := map[string]any{
		"name": n.spec.Name, "display_name": n.spec.DisplayName, "description": n.spec.Description,
		"tags": n.spec.Tags, "version": "1.0.0",
		"skills": []map[string]any{{
			"id": n.spec.Name, "name": n.spec.DisplayName,
			"description": "Echoes the message (builtin demo backend).", "examples": []string{n.spec.Example},
		}},
		"backend": map[string]string{"kind": "builtin", "builtin": "echo"},
	}
	listings, err := d.listAgents(ctx, n)
	if err != nil {
		return "", err
	}
	verb, method, path, want := "registered", http.MethodPost, "/api/v1/agents", http.StatusCreated
	for _, l := range listings {
		if l.Local && l.Name == n.spec.Name {
			verb, method, path, want = "re-published", http.MethodPut, "/api/v1/agents/"+l.ID, http.StatusOK
		}
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, n.baseURL()+path, bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != want {
		return "", fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(out))
	}
	var got demoListing
	if err := json.Unmarshal(out, &got); err != nil || got.ID == "" {
		return "", fmt.Errorf("%s %s: unreadable answer %q", method, path, out)
	}
	n.agentID = got.ID
	return verb, nil
}

// waitMirrored waits until every node's API lists every node's extra agent:
// the catalogue has travelled the network. A timeout is a warning, not a
// failure: the nodes are up and may still converge.
func (d *demo) waitMirrored(ctx context.Context) error {
	d.progress("waiting for every portal to list all three agents …")
	began := time.Now()
	deadline := time.NewTimer(d.cfg.SyncTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(demoPollEvery)
	defer tick.Stop()
	for {
		missing := d.missingListings(ctx)
		if len(missing) == 0 {
			d.progress("every portal lists all three agents (%.1fs)", time.Since(began).Seconds())
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			d.warn("after %s still missing: %s; the nodes keep syncing (see the logs)", d.cfg.SyncTimeout, strings.Join(missing, "; "))
			return nil
		case <-tick.C:
		}
	}
}

// missingListings says which node lacks which extra agent.
func (d *demo) missingListings(ctx context.Context) []string {
	var missing []string
	for _, n := range d.nodes {
		listings, err := d.listAgents(ctx, n)
		if err != nil {
			missing = append(missing, n.name+": "+err.Error())
			continue
		}
		have := map[string]bool{}
		for _, l := range listings {
			have[l.ID] = true
		}
		var lacks []string
		for _, o := range d.nodes {
			if !have[o.agentID] {
				lacks = append(lacks, o.spec.Name)
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, n.name+" lacks "+strings.Join(lacks, ", "))
		}
	}
	return missing
}

// getJSON decodes the 200 answer of a GET into v.
func (d *demo) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v)
}

// printSummary tells the user where the planet is and what to try.
func (d *demo) printSummary(token string, took time.Duration) {
	w := d.out
	a := d.nodes[0]
	fmt.Fprintf(w, "\nAgentSite local planet is up: three nodes in %.1fs.\n\n", took.Seconds())
	for _, n := range d.nodes {
		fmt.Fprintf(w, "  %s  portal %s   (%s, pid %d)\n", n.name, n.baseURL(), n.engine, n.cmd.Process.Pid)
		fmt.Fprintf(w, "          hosts  %s (tags %s) + echo, calculator\n", n.spec.Name, strings.Join(n.spec.Tags, ", "))
		fmt.Fprintf(w, "          p2p    %s\n", n.p2pAddr)
		fmt.Fprintf(w, "          data   %s   log %s\n", n.dataDir, n.logPath)
	}
	fmt.Fprintf(w, "\nnode-b and node-c bootstrapped through node-a:\n  --bootstrap %s\n", a.p2pAddr)
	fmt.Fprintf(w, "Join with a fourth node of your own:\n  agentsite serve --data-dir %s --http-addr 127.0.0.1:%d --bootstrap %s\n",
		filepath.Join(d.cfg.Dir, "node-d"), d.cfg.BasePort+len(d.nodes), a.p2pAddr)
	b, c := d.nodes[1], d.nodes[2]
	fmt.Fprintf(w, "\nTry:\n")
	fmt.Fprintf(w, "  %s/agents                  every portal lists all agents of the planet\n", b.baseURL())
	fmt.Fprintf(w, "  curl -s '%s/api/v1/agents?tag=language'   node-a's translator, seen from node-c\n", c.baseURL())
	fmt.Fprintf(w, "  export TOKEN=%s   # operator token of this run, for POST /api/v1/agents\n", token)
	fmt.Fprintf(w, "\nPress Ctrl-C to stop all three nodes.\n\n")
}

// stopAll sends SIGTERM to every running node, waits for each (SIGKILL
// after demoStopTimeout) and reports how each ended.
func (d *demo) stopAll() error {
	var running []*demoNode
	for _, n := range d.nodes {
		if n.cmd == nil {
			continue
		}
		select {
		case <-n.exited:
		default:
			// Signal fails where SIGTERM does not exist (Windows): kill.
			if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				_ = n.cmd.Process.Kill()
			}
		}
		running = append(running, n)
	}
	var errs []error
	for _, n := range running {
		select {
		case <-n.exited:
		case <-time.After(demoStopTimeout):
			d.warn("%s did not stop within %s; killing it", n.name, demoStopTimeout)
			_ = n.cmd.Process.Kill()
			<-n.exited
		}
		switch {
		case n.waitErr == nil:
			d.progress("%s stopped", n.name)
		case isSignalExit(n.waitErr):
			d.progress("%s stopped (%v)", n.name, n.waitErr)
		default:
			errs = append(errs, fmt.Errorf("%s: %v; see %s", n.name, n.waitErr, n.logPath))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("demo nodes did not stop cleanly: %w", errors.Join(errs...))
	}
	return nil
}

// isSignalExit reports whether a child ended through a signal (Ctrl-C in
// the terminal reaches the whole process group) rather than an error.
func isSignalExit(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}
