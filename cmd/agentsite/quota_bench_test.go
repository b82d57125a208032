package main

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// BenchmarkMirrorBigHost: a fresh mirror of one host of N agents
// (AGENTSITE_BENCH_BIGHOST_N, default 50,000; imported offline first),
// whole nodes on SQLite at a 1 s heartbeat interval, with the default
// --max-listings-per-publisher (10,000). Reported: the share of the host's
// agents the mirror holds (held/announced) and the seconds from the
// mirror's start until it held them all, or until the deadline
// (AGENTSITE_BENCH_BIGHOST_WAIT, default 10m) if it never does.
//
//	go test -run '^$' -bench MirrorBigHost -benchtime 1x -timeout 30m ./cmd/agentsite
func BenchmarkMirrorBigHost(b *testing.B) {
	n := 50_000
	if v := os.Getenv("AGENTSITE_BENCH_BIGHOST_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("AGENTSITE_BENCH_BIGHOST_N=%q: want a positive number", v)
		}
	}
	wait := 10 * time.Minute
	if v := os.Getenv("AGENTSITE_BENCH_BIGHOST_WAIT"); v != "" {
		var err error
		if wait, err = time.ParseDuration(v); err != nil || wait <= 0 {
			b.Fatalf("AGENTSITE_BENCH_BIGHOST_WAIT=%q: want a duration", v)
		}
	}
	for i := 0; i < b.N; i++ {
		held, imported, fill := mirrorBigHost(b, n, wait)
		b.ReportMetric(float64(held)/float64(n), "held/announced")
		b.ReportMetric(float64(held), "held")
		b.ReportMetric(fill.Seconds(), "s/fill")
		b.ReportMetric(imported.Seconds(), "s/import")
	}
}
