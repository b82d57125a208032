package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/agentsite/agentsite/handlers/apiwire"
)

// batchPerClient is the paper's experiment: at concurrency c, a fixed batch
// of batchPerClient*c requests (50, 100, 200 at 5, 10, 20 clients).
const batchPerClient = 10

// row is the measurement at one concurrency level.
type row struct {
	Concurrency int
	Timed       *vegeta.Metrics // the --duration run
	Elapsed     time.Duration   // first request sent to last response read
	Batch       *vegeta.Metrics // the fixed batch of batchPerClient*c requests
	BatchWall   time.Duration
	CPU         []cpuShare // who used the CPUs during the timed run, if measured
}

// loopbackTransport is an HTTP transport that can only dial loopback
// addresses and never uses a proxy: the load must not leave the machine.
// It keeps up to idle connections per host, to up to hosts hosts.
func loopbackTransport(idle, hosts int) *http.Transport {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
				return nil, fmt.Errorf("refusing to dial %s: load goes to loopback only", addr)
			}
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConns:        idle * max(hosts, 1),
		MaxIdleConnsPerHost: idle,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
}

// targetURLs expands the path template with every query, the i-th on the
// base URL i mod len(baseURLs): a targeter walking the list sends
// consecutive requests round-robin to the replicas, and each query to one
// replica only.
func targetURLs(baseURLs []string, cfg *config) []string {
	urls := make([]string, len(cfg.Queries))
	for i, q := range cfg.Queries {
		if cfg.Body != "" {
			urls[i] = baseURLs[i%len(baseURLs)] + cfg.Path
			continue
		}
		urls[i] = baseURLs[i%len(baseURLs)] + fmt.Sprintf(cfg.Path, url.QueryEscape(q))
	}
	return urls
}

// targetBodies is the POST body of each query (--body), nil for GETs.
func targetBodies(cfg *config) [][]byte {
	if cfg.Body == "" {
		return nil
	}
	bodies := make([][]byte, len(cfg.Queries))
	for i, q := range cfg.Queries {
		esc, _ := json.Marshal(q)
		bodies[i] = []byte(strings.Replace(cfg.Body, "%s", string(esc[1:len(esc)-1]), 1))
	}
	return bodies
}

// rotatingPostTargeter is rotatingTargeter for POSTs of bodies[i] to
// urls[i].
func rotatingPostTargeter(urls []string, bodies [][]byte, n *atomic.Uint64) vegeta.Targeter {
	header := http.Header{"Content-Type": []string{"application/json"}}
	return func(t *vegeta.Target) error {
		i := (n.Add(1) - 1) % uint64(len(urls))
		t.Method = http.MethodPost
		t.URL = urls[i]
		t.Header = header
		t.Body = bodies[i]
		return nil
	}
}

// rotatingTargeter hands out GET requests cycling through urls; n counts
// the requests handed out (shared by every level of a run, so a distinct
// mix sends each query once before it wraps).
func rotatingTargeter(urls []string, n *atomic.Uint64) vegeta.Targeter {
	return func(t *vegeta.Target) error {
		i := n.Add(1) - 1
		t.Method = http.MethodGet
		t.URL = urls[i%uint64(len(urls))]
		t.Header = nil
		t.Body = nil
		return nil
	}
}

// countPacer sends as fast as possible and stops after n hits.
type countPacer uint64

// Pace implements vegeta.Pacer.
func (p countPacer) Pace(_ time.Duration, hits uint64) (time.Duration, bool) {
	return 0, hits >= uint64(p)
}

// Rate implements vegeta.Pacer; the rate is unbounded.
func (p countPacer) Rate(time.Duration) float64 { return 0 }

// preflight fetches every query once (limit 100) and prints how many
// listings it matches, so a broken seed or route fails loudly before timing.
func preflight(ctx context.Context, baseURL string, cfg *config, progress func(string, ...any)) error {
	client := &http.Client{Transport: loopbackTransport(1, 1), Timeout: cfg.Timeout}
	defer client.CloseIdleConnections()
	var parts []string
	urls := targetURLs([]string{baseURL}, cfg)
	if bodies := targetBodies(cfg); bodies != nil {
		// POSTs (ARD search): each query must answer 200.
		for i, u := range urls[:min(len(urls), 20)] {
			resp, err := client.Post(u, "application/json", bytes.NewReader(bodies[i]))
			if err != nil {
				return fmt.Errorf("preflight POST %s: %w", u, err)
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("preflight POST %s %s: %s: %.300s", u, bodies[i], resp.Status, body)
			}
		}
		progress("POST %s answers 200 for the first %d queries", cfg.Path, min(len(urls), 20))
		return nil
	}
	if cfg.Mix == "distinct" {
		// A sample from the end of the list, which the run reaches last
		// if at all, so the preflight does not warm the cache for it.
		urls = urls[len(urls)-min(len(urls), 20):]
	}
	for _, u := range urls {
		u = strings.Replace(u, "limit=20", "limit=100", 1)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return fmt.Errorf("preflight %s: %w", u, err)
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("preflight %s: %w", u, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("preflight %s: %s: %.300s", u, resp.Status, body)
		}
		var page apiwire.AgentList
		if err := json.Unmarshal(body, &page); err != nil {
			return fmt.Errorf("preflight %s: not the agents JSON: %w", u, err)
		}
		more := ""
		if page.NextCursor != "" {
			more = "+"
		}
		q, _ := url.Parse(u)
		parts = append(parts, fmt.Sprintf("%q %d%s", q.Query().Get("q"), len(page.Agents), more))
	}
	progress("matches per query on %s (first page of 100): %s", baseURL, strings.Join(parts, ", "))
	return nil
}

// attackAll measures every concurrency level in turn, spreading the
// requests round-robin over baseURLs (the replicas of one portal, or one
// server). meter, if not nil, measures the CPU use of each timed run.
func attackAll(ctx context.Context, baseURLs []string, cfg *config, sent *atomic.Uint64, meter *cpuMeter, progress func(string, ...any)) ([]row, error) {
	urls := targetURLs(baseURLs, cfg)
	var rows []row
	for _, c := range cfg.Concurrency {
		r, err := attackLevel(ctx, urls, len(baseURLs), c, cfg, sent, meter, progress)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// attackLevel runs, at concurrency c and on one pool of keep-alive
// connections to the hosts servers: a warm-up, the timed run, then the
// fixed batch.
func attackLevel(ctx context.Context, urls []string, hosts, c int, cfg *config, sent *atomic.Uint64, meter *cpuMeter, progress func(string, ...any)) (row, error) {
	tr := loopbackTransport(c, hosts)
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	targeter := rotatingTargeter(urls, sent)
	if bodies := targetBodies(cfg); bodies != nil {
		targeter = rotatingPostTargeter(urls, bodies, sent)
	}
	r := row{Concurrency: c}

	if cfg.Warmup > 0 {
		progress("c=%d: warm-up %s", c, cfg.Warmup)
		if _, _, err := attackOnce(ctx, client, targeter, c, cfg, vegeta.Rate{Freq: 0}, cfg.Warmup, nil); err != nil {
			return r, err
		}
	}

	progress("c=%d: timed run %s", c, cfg.Duration)
	tick := func(m *vegeta.Metrics, elapsed time.Duration) {
		progress("c=%d: %d requests (%.0f req/s) after %.0fs", c, m.Requests, float64(m.Requests)/elapsed.Seconds(), elapsed.Seconds())
	}
	before := meter.sample()
	m, wall, err := attackOnce(ctx, client, targeter, c, cfg, vegeta.Rate{Freq: 0}, cfg.Duration, tick)
	if err != nil {
		return r, err
	}
	r.Timed, r.Elapsed = m, wall
	if r.CPU = meter.shares(before, meter.sample(), runtime.NumCPU()); r.CPU != nil {
		progress("c=%d: CPU during the timed run, %% of one CPU: %s", c, cpuText(r.CPU))
	}

	n := batchPerClient * c
	progress("c=%d: fixed batch of %d requests", c, n)
	if r.Batch, r.BatchWall, err = attackOnce(ctx, client, targeter, c, cfg, countPacer(n), 0, nil); err != nil {
		return r, err
	}
	logErrors(c, m, progress)
	logErrors(c, r.Batch, progress)
	return r, nil
}

// attackOnce runs one vegeta attack with c closed-loop workers and returns
// its metrics and its wall time (first request sent to last response read).
// tick, if set, is called about once a second with the running totals.
func attackOnce(ctx context.Context, client *http.Client, tr vegeta.Targeter, c int, cfg *config,
	pacer vegeta.Pacer, du time.Duration, tick func(*vegeta.Metrics, time.Duration)) (*vegeta.Metrics, time.Duration, error) {
	atk := vegeta.NewAttacker(
		vegeta.Client(client), // shared keep-alive pool; the options below apply to it
		vegeta.Workers(uint64(c)),
		vegeta.MaxWorkers(uint64(c)),
		vegeta.KeepAlive(true),
		vegeta.Timeout(cfg.Timeout),
		vegeta.Redirects(vegeta.NoFollow),
		vegeta.MaxBody(0), // read and discard bodies without keeping them
	)
	var m vegeta.Metrics
	start := time.Now()
	next := start.Add(time.Second)
	results := atk.Attack(tr, pacer, du, fmt.Sprintf("c%d", c))
	for {
		select {
		case <-ctx.Done():
			atk.Stop()
			for range results { // drain so the workers exit
			}
			return nil, 0, ctx.Err()
		case res, ok := <-results:
			if !ok {
				m.Close()
				return &m, m.End.Sub(m.Earliest), nil
			}
			m.Add(res)
			if tick != nil && time.Now().After(next) {
				tick(&m, time.Since(start))
				next = next.Add(time.Second)
			}
		}
	}
}

// logErrors prints the distinct errors of a run, if any.
func logErrors(c int, m *vegeta.Metrics, progress func(string, ...any)) {
	if len(m.Errors) == 0 {
		return
	}
	errs := append([]string(nil), m.Errors...)
	sort.Strings(errs)
	if len(errs) > 5 {
		errs = append(errs[:5], fmt.Sprintf("... %d more", len(m.Errors)-5))
	}
	progress("c=%d: errors: %s", c, strings.Join(errs, "; "))
}
