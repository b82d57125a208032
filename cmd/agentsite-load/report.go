package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// busyWarning is the CPU use by other processes, sampled at start, above
// which the report warns that the machine was not idle.
const busyWarning = 0.2

// report is the outcome of a run, printed as a markdown table.
type report struct {
	Mix      string // fixed or distinct
	Queries  int    // distinct queries in the mix
	Sent     uint64 // requests sent to agentsite (warm-ups and batches too)
	Ceiling  []row  // the same levels against the bare net/http server, if measured
	Store    string
	Replicas int // agentsite processes that served the run (portal replicas on one database if more than 1)
	Listings int
	Settled  bool    // statistics and indexes settled after seeding
	Busy     float64 // CPU busy fraction sampled when the tool started, -1 if unknown
	Path     string
	Body     string // POSTed (--body); "": GETs
	Duration time.Duration
	CPUs     int
	Rows     []row
	Date     time.Time
	Memory   []memory // of each server, in start order
}

// memory is one server's resident set size at the end of the agentsite
// runs and its peak, in bytes (zero where unknown).
type memory struct {
	Name      string
	RSS, Peak int64
}

// servedBy says which agentsite processes served the run.
func (r *report) servedBy() string {
	if r.Replicas <= 1 {
		return "one agentsite process"
	}
	return fmt.Sprintf("%d agentsite replicas on one %s database (own data dirs and ports), requests round-robin; replicas, database and load generator share the CPUs", r.Replicas, r.Store)
}

// write prints the report as markdown.
func (r *report) write(w io.Writer) error {
	var b bytes.Buffer
	replicas := ""
	if r.Replicas > 1 {
		replicas = fmt.Sprintf(", %d replicas", r.Replicas)
	}
	method := "GET"
	if r.Body != "" {
		method = "POST"
		r.Path += " " + r.Body
	}
	fmt.Fprintf(&b, "\n### %s, %d listings%s: %s %s\n\n", r.Store, r.Listings, replicas, method, r.Path)
	fmt.Fprintf(&b, "%s · %d CPUs (%s busy before the run) · %s/%s · %s · closed loop, keep-alive, %s per level after a warm-up; load generator on the same machine\n\n",
		r.Date.Format("2006-01-02 15:04 MST"), r.CPUs, busyText(r.Busy), runtime.GOOS, runtime.GOARCH, runtime.Version(), r.Duration)
	fmt.Fprintf(&b, "Served by %s.\n\n", r.servedBy())
	if r.Mix == "distinct" {
		wrapped := "none sent twice"
		if r.Sent > uint64(r.Queries) {
			wrapped = fmt.Sprintf("the list wrapped around after %d", r.Queries)
		}
		fmt.Fprintf(&b, "Mix: %d distinct one- and two-word queries from the catalogue's vocabulary, read cache on; %d requests sent to agentsite, %s.\n\n", r.Queries, r.Sent, wrapped)
	} else {
		fmt.Fprintf(&b, "Mix: %d search terms rotated.\n\n", r.Queries)
	}
	table(&b, r.Rows)
	for _, row := range r.Rows {
		if row.CPU != nil {
			fmt.Fprintf(&b, "\nCPU during the timed run at %d clients, in %% of one CPU (%d CPUs = %d %%): %s.\n", row.Concurrency, r.CPUs, 100*r.CPUs, cpuText(row.CPU))
		}
	}
	if len(r.Ceiling) > 0 {
		b.WriteString("\nThe same requests against a bare net/http server on this machine sending the same bytes (the ceiling):\n\n")
		table(&b, r.Ceiling)
		who := "agentsite"
		if r.Replicas > 1 {
			who = fmt.Sprintf("agentsite (%d replicas)", r.Replicas)
		}
		fmt.Fprintf(&b, "\n| clients | %s req/s | ceiling req/s | agentsite / ceiling |\n|---:|---:|---:|---:|\n", who)
		for i, row := range r.Rows {
			if i >= len(r.Ceiling) || row.Elapsed <= 0 || r.Ceiling[i].Elapsed <= 0 {
				continue
			}
			a := float64(row.Timed.Requests) / row.Elapsed.Seconds()
			c := float64(r.Ceiling[i].Timed.Requests) / r.Ceiling[i].Elapsed.Seconds()
			fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.0f %% |\n", row.Concurrency, a, c, 100*a/c)
		}
	}
	if r.Busy >= busyWarning {
		fmt.Fprintf(&b, "\nWarning: other processes kept %.0f %% of the CPUs busy when the tool started; these numbers are pessimistic.\n", 100*r.Busy)
	}
	if !r.Settled {
		b.WriteString("\nMeasured right after the bulk seed, without VACUUM ANALYZE (--settle=false).\n")
	}
	if len(r.Memory) == 1 {
		fmt.Fprintf(&b, "\nServer RSS at the end of the agentsite runs: %s (peak %s).\n", mib(r.Memory[0].RSS), mib(r.Memory[0].Peak))
	} else if len(r.Memory) > 1 {
		parts := make([]string, len(r.Memory))
		for i, m := range r.Memory {
			parts[i] = fmt.Sprintf("%s %s (peak %s)", m.Name, mib(m.RSS), mib(m.Peak))
		}
		fmt.Fprintf(&b, "\nRSS of each replica at the end of the agentsite runs: %s.\n", strings.Join(parts, ", "))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// table writes the rows of one series of levels.
func table(b *bytes.Buffer, rows []row) {
	b.WriteString("| clients | requests | req/s | mean | p50 | p90 | p99 | max | success | non-2xx | batch (10×c) | batch mean | batch req/s |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|\n")
	for _, row := range rows {
		m, bm := row.Timed, row.Batch
		fmt.Fprintf(b, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s |\n",
			row.Concurrency, m.Requests, perSec(m.Requests, row.Elapsed),
			ms(m.Latencies.Mean), ms(m.Latencies.P50), ms(m.Latencies.P90), ms(m.Latencies.P99), ms(m.Latencies.Max),
			pct(m.Success), non2xx(m.StatusCodes),
			bm.Requests, ms(bm.Latencies.Mean), perSec(bm.Requests, row.BatchWall))
	}
}

// appendTo appends the report to a markdown file.
func (r *report) appendTo(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := r.write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cpuBusy samples /proc/stat over d and returns the fraction of all CPUs
// that was busy (not idle or waiting for I/O), or -1 if unknown.
func cpuBusy(d time.Duration) float64 {
	read := func() (busy, total uint64, ok bool) {
		b, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0, 0, false
		}
		line, _, _ := strings.Cut(string(b), "\n")
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != "cpu" {
			return 0, 0, false
		}
		for i, s := range f[1:] {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			total += v
			if i != 3 && i != 4 { // idle, iowait
				busy += v
			}
		}
		return busy, total, true
	}
	b0, t0, ok0 := read()
	time.Sleep(d)
	b1, t1, ok1 := read()
	if !ok0 || !ok1 || t1 <= t0 {
		return -1
	}
	return float64(b1-b0) / float64(t1-t0)
}

func busyText(f float64) string {
	if f < 0 {
		return "unknown"
	}
	return strconv.FormatFloat(100*f, 'f', 0, 64) + " %"
}

// ms formats a latency in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64) + " ms"
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " ms"
}

func perSec(n uint64, d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return strconv.FormatFloat(float64(n)/d.Seconds(), 'f', 0, 64)
}

func pct(f float64) string { return strconv.FormatFloat(100*f, 'f', 2, 64) + " %" }

func mib(n int64) string {
	if n <= 0 {
		return "unknown"
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
}

// non2xx lists status codes outside 2xx as "code×count" ("0" is a
// transport error or timeout), or "–".
func non2xx(codes map[string]int) string {
	var out []string
	for code, n := range codes {
		if !strings.HasPrefix(code, "2") || len(code) != 3 {
			out = append(out, fmt.Sprintf("%s×%d", code, n))
		}
	}
	if len(out) == 0 {
		return "–"
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
