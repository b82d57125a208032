package main

import (
	"bytes"
	"io"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// TestReplicasFlag: --replicas defaults to 1, takes 2 with Postgres, and
// is refused, with a reason, with SQLite or out of range.
func TestReplicasFlag(t *testing.T) {
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Replicas != 1 {
		t.Errorf("default --replicas = %d, want 1", cfg.Replicas)
	}
	if cfg, err = parseFlags([]string{"--store", "postgres", "--replicas", "2"}, io.Discard); err != nil || cfg.Replicas != 2 {
		t.Errorf("--replicas 2 with Postgres: %+v, %v", cfg, err)
	}
	if _, err := parseFlags([]string{"--store", "sqlite", "--replicas", "1"}, io.Discard); err != nil {
		t.Errorf("--replicas 1 with SQLite: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "sqlite", "--replicas", "2"}, "--replicas 2 needs --store postgres"},
		{[]string{"--replicas", "0"}, "--replicas must be between 1 and"},
		{[]string{"--replicas", "99"}, "--replicas must be between 1 and"},
	} {
		_, err := parseFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestRoundRobinTargets: consecutive requests go to the replicas in turn,
// and the first pass over a distinct mix sends every query once, to one
// replica only.
func TestRoundRobinTargets(t *testing.T) {
	bases := []string{"http://127.0.0.1:1001", "http://127.0.0.1:1002"}
	cfg := &config{Path: "/api/v1/agents?q=%s&limit=20", Queries: distinctQueries(2000, 1000)}
	urls := targetURLs(bases, cfg)
	next := rotatingTargeter(urls, &atomic.Uint64{})
	perBase := map[string]int{}
	seen := map[string]bool{}
	for i := range len(urls) {
		var tg vegeta.Target
		if err := next(&tg); err != nil {
			t.Fatal(err)
		}
		if want := bases[i%len(bases)]; !strings.HasPrefix(tg.URL, want+"/") {
			t.Fatalf("request %d went to %s, want %s", i, tg.URL, want)
		}
		u, err := url.Parse(tg.URL)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query().Get("q")
		if seen[q] {
			t.Fatalf("query %q sent twice", q)
		}
		seen[q] = true
		perBase[u.Host]++
	}
	if perBase["127.0.0.1:1001"] != 1000 || perBase["127.0.0.1:1002"] != 1000 {
		t.Errorf("requests per replica: %v, want 1000 each", perBase)
	}

	// One server: every URL on it, as before.
	for _, u := range targetURLs(bases[:1], cfg) {
		if !strings.HasPrefix(u, bases[0]+"/") {
			t.Fatalf("%s not on %s", u, bases[0])
		}
	}
}

// TestReportSaysReplicas: the report says how many processes served the
// run, and gives each replica's memory.
func TestReportSaysReplicas(t *testing.T) {
	rows := []row{{Concurrency: 20, Timed: &vegeta.Metrics{Requests: 100}, Elapsed: time.Second, Batch: &vegeta.Metrics{}}}
	for _, tc := range []struct {
		replicas int
		mem      []memory
		want     []string
	}{
		{1, []memory{{Name: "agentsite", RSS: 100 << 20, Peak: 120 << 20}},
			[]string{"### postgres, 2000 listings: GET", "Served by one agentsite process.", "Server RSS at the end of the agentsite runs: 100.0 MiB (peak 120.0 MiB)."}},
		{2, []memory{{Name: "replica 1", RSS: 100 << 20, Peak: 120 << 20}, {Name: "replica 2", RSS: 90 << 20, Peak: 95 << 20}},
			[]string{"### postgres, 2000 listings, 2 replicas: GET", "Served by 2 agentsite replicas on one postgres database",
				"replica 1 100.0 MiB (peak 120.0 MiB), replica 2 90.0 MiB (peak 95.0 MiB)"}},
	} {
		r := &report{Mix: "distinct", Queries: 2000, Store: "postgres", Replicas: tc.replicas, Listings: 2000,
			Settled: true, Path: "/api/v1/agents?q=%s&limit=20", Duration: time.Second, CPUs: 2, Rows: rows, Memory: tc.mem, Date: time.Now()}
		var b bytes.Buffer
		if err := r.write(&b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%d replicas: report lacks %q:\n%s", tc.replicas, w, b.String())
			}
		}
	}
}

// TestProcTicks: the CPU time and name of this process read from /proc.
func TestProcTicks(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	// Burn a little CPU so the counters have something to show, bounded by
	// a deadline rather than a count.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); {
		if ticks, comm := procTicks("/proc/self/stat"); ticks > 0 && comm != "" {
			return
		}
		for i := 0; i < 1_000_000; i++ {
			_ = i * i
		}
	}
	ticks, comm := procTicks("/proc/self/stat")
	t.Fatalf("procTicks(/proc/self/stat) = %d, %q", ticks, comm)
}

// TestCPUShares: the shares of two samples add up to all CPUs.
func TestCPUShares(t *testing.T) {
	m := &cpuMeter{servers: []*server{{name: "replica 1"}, {name: "replica 2"}}}
	a := cpuSample{ok: true, total: 1000, idle: 100, servers: []uint64{10, 20}, postgres: map[int]uint64{7: 5, 8: 40}, self: 1}
	b := cpuSample{ok: true, total: 1200, idle: 110, servers: []uint64{60, 70}, postgres: map[int]uint64{7: 35, 9: 20}, self: 31}
	got := cpuText(m.shares(a, b, 2))
	want := "replica 1 50 %, replica 2 50 %, postgres (all its processes) 50 %, load generator 30 %, other 10 %, idle 10 %"
	if got != want {
		t.Errorf("shares = %s\nwant     %s", got, want)
	}
	if m.shares(cpuSample{}, b, 2) != nil {
		t.Error("shares of a failed sample")
	}
}
