package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// importConfig is the settings of `agentsite import`.
type importConfig struct {
	Format        string
	Node          string
	OperatorToken string
	MCPTool       string
	Workers       int
	BatchSize     int
	MaxReasons    int
	CPUProfile    string
	File          string
	// Crawl is a file of domains whose /.well-known/ai-catalog.json to
	// import (--crawl), at most CrawlMax of them, within CrawlTimeout.
	Crawl        string
	CrawlMax     int
	CrawlTimeout time.Duration
	// Serve is the node an offline import builds (buildApp, Offline):
	// serve's defaults and the flags import shares with it (data dir,
	// database, the registry's limits), with their environment twins.
	Serve Config
}

const importUsage = `usage: agentsite import [flags] FILE   (FILE "-" is standard input)

Registers every item of FILE as an agent of this node, each as a form
registration would (validation, seq rule, signed by the node key). Either on
a stopped node's --data-dir / --database-url, or through a running node's
API with --node URL and --operator-token. Progress goes to stderr; the
summary (created, updated, refused with reasons) to stdout.

flags:
`

func parseImport(args []string, getenv func(string) string, out io.Writer) (importConfig, error) {
	c := importConfig{Serve: defaultConfig()}
	c.Serve.StoreTimeout = importStoreTimeout
	fs := flag.NewFlagSet("agentsite import", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() { fmt.Fprint(out, importUsage); fs.PrintDefaults() }
	c.Serve.declareShared(fs)
	fs.StringVar(&c.Format, "format", bulk.FormatJSONL, "file format: "+strings.Join(bulk.Formats, ", "))
	fs.StringVar(&c.Node, "node", "", "base URL of a running node to import through (POST /api/v1/agents:batch); needs --operator-token")
	fs.StringVar(&c.OperatorToken, "operator-token", "", "the running node's operator token (with --node)")
	fs.StringVar(&c.MCPTool, "mcp-tool", "", "mcp-registry: the tool each server's agent calls (the registry lists none; empty: the server's short name)")
	fs.IntVar(&c.Workers, "workers", 8, "items registered at once (1-16)")
	fs.IntVar(&c.BatchSize, "batch-size", 500, "items per API request (with --node; at most 1000)")
	fs.IntVar(&c.MaxReasons, "max-reasons", 100, "refused items listed one by one in the summary (the rest are counted)")
	fs.StringVar(&c.CPUProfile, "cpu-profile", "", "write a CPU profile of the import to this file (go tool pprof)")
	fs.StringVar(&c.Crawl, "crawl", "", "import the AI Catalogs of the domains listed in this file (one a line), from https://<domain>/.well-known/ai-catalog.json; no FILE then")
	fs.IntVar(&c.CrawlMax, "crawl-max", 1000, "--crawl: at most this many domains")
	fs.DurationVar(&c.CrawlTimeout, "crawl-timeout", 10*time.Minute, "--crawl: the whole crawl's time limit (each domain: 15s)")
	hintDurations(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, name := range []string{"data-dir", "database-url", "operator-token", "record-ttl", "allow-private-endpoints", "allow-endpoint"} {
		if v, ok := lookupEnv(getenv, EnvName(name)); ok && !given[name] {
			if err := fs.Set(name, v); err != nil {
				return c, fmt.Errorf("%s=%q: %w", EnvName(name), v, err)
			}
		}
	}
	switch {
	case c.Crawl != "" && fs.NArg() != 0:
		return c, errors.New("--crawl reads its domains from its file: give no FILE with it")
	case c.Crawl != "":
		if given["format"] && c.Format != bulk.FormatAICatalog {
			return c, errors.New("--crawl imports AI Catalogs: leave --format out or give ai-catalog")
		}
		c.Format = bulk.FormatAICatalog
		if c.CrawlMax < 1 || c.CrawlTimeout <= 0 {
			return c, errors.New("--crawl-max must be at least 1 and --crawl-timeout positive")
		}
	case fs.NArg() != 1:
		fs.Usage()
		return c, errors.New("give exactly one FILE to import")
	default:
		c.File = fs.Arg(0)
	}
	switch {
	case c.Node != "" && c.OperatorToken == "":
		return c, errors.New("--node needs --operator-token (or AGENTSITE_OPERATOR_TOKEN)")
	case c.BatchSize < 1 || c.BatchSize > apiwire.MaxBatchItems:
		return c, fmt.Errorf("--batch-size must be 1..%d", apiwire.MaxBatchItems)
	}
	if err := errors.Join(c.Serve.validateShared()...); err != nil {
		return c, err
	}
	if !slices.Contains(bulk.Formats, c.Format) {
		return c, fmt.Errorf("--format must be one of %s", strings.Join(bulk.Formats, ", "))
	}
	return c, nil
}

// runImport is `agentsite import`.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parseImport(args, getenv, stderr)
	if err != nil {
		return err
	}
	if c.CPUProfile != "" {
		pf, err := os.Create(c.CPUProfile)
		if err != nil {
			return fmt.Errorf("create CPU profile: %w", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fmt.Errorf("start CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	// What an import reads is named by remote catalogues: it reaches the
	// public internet and the --allow-endpoint entries, never the rest of
	// the operator's networks (--allow-private-endpoints is for backends).
	outbound := c.Serve.outbound()
	rt := runtime.NewRuntime(nil, runtime.RuntimeOptions{Allow: outbound.Policy(runtime.PurposeImport).Allow, UserAgent: "AgentSite/" + buildVersion(),
		Logger: slog.New(slog.DiscardHandler)})
	defer rt.Close()
	opts := bulk.Options{Format: c.Format, MCPTool: c.MCPTool, FetchCard: cardFetcher(rt),
		FetchDoc: docFetcher(runtime.NewPurposeClient(outbound, runtime.PurposeImport, docTimeout))}
	items, closeIn, err := importItems(ctx, c, stdin, stderr, opts)
	if err != nil {
		return err
	}
	defer closeIn()
	total := 0
	if c.Crawl == "" && c.Format == bulk.FormatJSONL && c.File != "-" {
		total = countJSONLines(c.File)
	}
	sum := newImportSummary(stderr, c.MaxReasons)
	sum.bar = newImportProgress(stderr, isTerminal(stderr), total, time.Now)
	if c.Node != "" {
		err = importThroughNode(ctx, c, items, sum)
	} else {
		err = importOffline(ctx, c, items, sum)
	}
	sum.bar.finish(sum.total(), sum.created, sum.updated, sum.refused)
	sum.print(stdout)
	if err != nil {
		return err
	}
	if sum.refused > 0 {
		return refusedError{refused: sum.refused, total: sum.total()}
	}
	return nil
}

// refusedError is the outcome of an import that refused some items: the
// command exits non-zero so that a script sees it, though the other items
// were imported.
type refusedError struct{ refused, total int }

func (e refusedError) Error() string {
	were := "were"
	if e.refused == 1 {
		were = "was"
	}
	return fmt.Sprintf("%d of %s %s refused (the summary says why); the others were imported", e.refused, items(e.total), were)
}

// items is n with its noun: "1 item", "2 items".
func items(n int) string {
	if n == 1 {
		return "1 item"
	}
	return strconv.Itoa(n) + " items"
}

// cardFetcher fetches A2A cards through the runtime's guarded client.
func cardFetcher(rt *runtime.Runtime) bulk.CardFetcher {
	return func(ctx context.Context, url string) (bulk.Card, error) {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		info, err := rt.FetchA2ACard(ctx, url)
		if err != nil {
			return bulk.Card{}, err
		}
		card := info.Card
		out := bulk.Card{Name: card.Name, Description: card.Description, Version: card.Version, Signer: info.Signer}
		for _, s := range card.Skills {
			out.Skills = append(out.Skills, agent.Skill{ID: s.ID, Name: s.Name, Description: s.Description, Examples: s.Examples})
		}
		return out, nil
	}
}

// importOffline registers into a stopped node's store, signing with its
// key, through the registry and Sink the node builds (buildApp, offline).
func importOffline(ctx context.Context, c importConfig, items iter.Seq[registry.BatchItem], sum *importSummary) (err error) {
	logger := slog.New(slog.NewTextHandler(sum.progress, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := buildApp(ctx, c.Serve, appDeps{Logger: logger, Offline: true})
	if err != nil {
		return err
	}
	defer func() {
		if _, cerr := a.close(); err == nil {
			err = cerr
		}
	}()
	fmt.Fprintf(sum.progress, "importing into %s as node %s\n", a.engineName, a.peerID)
	return a.registry.Batch(ctx, registry.Operator, items, c.Workers, sum.add)
}

// importThroughNode sends the items to a running node's batch API,
// BatchSize at a time; items that could not be read stay here, refused.
// Two requests are on their way at once, so the node seals one batch
// while it writes the other (each batch is one transaction there); a
// batch naming an agent of a batch still on its way waits for it, so
// items of one name are registered in the file's order.
func importThroughNode(ctx context.Context, c importConfig, items iter.Seq[registry.BatchItem], sum *importSummary) error {
	client := &http.Client{Timeout: 5 * time.Minute}
	endpoint := strings.TrimRight(c.Node, "/") + "/api/v1/agents:batch"
	fmt.Fprintf(sum.progress, "importing through %s\n", endpoint)
	var (
		batch   []apiwire.AgentInput
		index   []int
		onWay   []*sentBatch
		failure error
	)
	// collect waits for the oldest batch on its way and counts its results.
	collect := func() {
		b := onWay[0]
		onWay = onWay[1:]
		<-b.done
		if b.err != nil {
			failure = cmp.Or(failure, b.err)
			return
		}
		for _, r := range b.res.Results {
			out := registry.BatchResult{Index: b.index[r.Index], Name: r.Name, ID: r.ID, Outcome: r.Outcome}
			if r.Error != nil {
				out.Err = apiError{*r.Error}
			}
			sum.add(out)
		}
	}
	flush := func() {
		if len(batch) == 0 {
			return
		}
		b := &sentBatch{items: batch, index: index, done: make(chan struct{})}
		for i := len(onWay) - 1; i >= 0; i-- {
			if onWay[i].shares(b.items) {
				for range i + 1 {
					collect()
				}
				break
			}
		}
		for len(onWay) >= batchesOnTheirWay {
			collect()
		}
		go func() {
			defer close(b.done)
			b.res, b.err = postBatch(ctx, client, endpoint, c.OperatorToken, b.items)
		}()
		onWay = append(onWay, b)
		batch, index = nil, nil
	}
	for it := range items {
		if failure != nil {
			break
		}
		if it.Err != nil {
			sum.add(registry.BatchResult{Index: it.Index, Name: it.Input.Name, Outcome: registry.OutcomeRefused, Err: it.Err})
			continue
		}
		batch = append(batch, apiwire.AgentInput(it.Input))
		index = append(index, it.Index)
		if len(batch) == c.BatchSize {
			flush()
		}
	}
	if failure == nil {
		flush()
	}
	for len(onWay) > 0 {
		collect()
	}
	return failure
}

// batchesOnTheirWay is how many batch requests an import through a node
// has sent and not yet had answered.
const batchesOnTheirWay = 2

// sentBatch is a batch request on its way: its items, their places in
// the file, and (once done is closed) the node's answer.
type sentBatch struct {
	items []apiwire.AgentInput
	index []int
	done  chan struct{}
	res   apiwire.BatchResponse
	err   error
}

// shares tells whether items names an agent b names.
func (b *sentBatch) shares(items []apiwire.AgentInput) bool {
	names := make(map[string]bool, len(b.items))
	for _, in := range b.items {
		names[strings.ToLower(strings.TrimSpace(in.Name))] = true
	}
	for _, in := range items {
		if names[strings.ToLower(strings.TrimSpace(in.Name))] {
			return true
		}
	}
	return false
}

// postBatch sends one batch, waiting and retrying when the node says it is
// over budget or its store is busy (429, 503 with Retry-After).
func postBatch(ctx context.Context, client *http.Client, endpoint, token string, items []apiwire.AgentInput) (apiwire.BatchResponse, error) {
	body, err := json.Marshal(apiwire.BatchRequest{Items: items})
	if err != nil {
		return apiwire.BatchResponse{}, err
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
		if err != nil {
			return apiwire.BatchResponse{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return apiwire.BatchResponse{}, fmt.Errorf("POST %s: %w", endpoint, err)
		}
		raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		if err != nil {
			return apiwire.BatchResponse{}, fmt.Errorf("read the answer: %w", err)
		}
		if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < 5 {
			wait := time.Duration(1<<attempt) * time.Second
			select {
			case <-ctx.Done():
				return apiwire.BatchResponse{}, ctx.Err()
			case <-time.After(wait):
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			var eb apiwire.ErrorBody
			if json.Unmarshal(raw, &eb) == nil && eb.Error.Message != "" {
				return apiwire.BatchResponse{}, fmt.Errorf("the node refused the batch (%d %s): %s", resp.StatusCode, eb.Error.Code, eb.Error.Message)
			}
			return apiwire.BatchResponse{}, fmt.Errorf("the node answered %s", resp.Status)
		}
		var out apiwire.BatchResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			return out, fmt.Errorf("the node's answer is not a batch result: %w", err)
		}
		if len(out.Results) != len(items) {
			return out, fmt.Errorf("the node answered %d results for %d items", len(out.Results), len(items))
		}
		return out, nil
	}
}

// apiError is a refusal the node sent, as an error.
type apiError struct{ e apiwire.Error }

func (a apiError) Error() string {
	msg := a.e.Message
	for f, m := range a.e.Fields {
		msg += fmt.Sprintf(" %s: %s;", f, m)
	}
	return strings.TrimSuffix(msg, ";")
}

// importSummary counts outcomes, prints progress (bar), and keeps the
// first refusals' reasons.
type importSummary struct {
	progress   io.Writer
	bar        *importProgress
	maxReasons int
	start      time.Time
	created    int
	updated    int
	refused    int
	reasons    []string
}

func newImportSummary(progress io.Writer, maxReasons int) *importSummary {
	now := time.Now()
	return &importSummary{progress: progress, maxReasons: maxReasons, start: now,
		bar: newImportProgress(progress, false, 0, time.Now)}
}

func (s *importSummary) total() int { return s.created + s.updated + s.refused }

// add records one result (Batch calls it from one goroutine at a time).
func (s *importSummary) add(r registry.BatchResult) {
	switch r.Outcome {
	case registry.OutcomeCreated:
		s.created++
	case registry.OutcomeUpdated:
		s.updated++
	default:
		s.refused++
		if len(s.reasons) < s.maxReasons {
			s.reasons = append(s.reasons, fmt.Sprintf("item %d (%s): %s", r.Index+1, orDash(r.Name), reason(r.Err)))
		}
	}
	s.bar.update(s.total(), s.created, s.updated, s.refused)
}

func (s *importSummary) print(w io.Writer) {
	el := time.Since(s.start)
	fmt.Fprintf(w, "%s in %s: %d created, %d updated, %d refused\n",
		items(s.total()), el.Round(time.Millisecond), s.created, s.updated, s.refused)
	for _, r := range s.reasons {
		fmt.Fprintln(w, "refused", r)
	}
	if more := s.refused - len(s.reasons); more > 0 {
		fmt.Fprintf(w, "... and %d more refused (--max-reasons)\n", more)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// reason is why an item was refused, fields and all.
func reason(err error) string {
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		var parts []string
		for f, m := range ve.Fields {
			parts = append(parts, f+": "+m)
		}
		slices.Sort(parts)
		return strings.Join(parts, "; ")
	}
	if err == nil {
		return "refused"
	}
	return err.Error()
}
