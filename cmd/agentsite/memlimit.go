package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// A node's heap is mostly long-lived: the search index and the caches.
// With Go's default collector target (GOGC=100) the heap grows to twice
// what is live before a collection, which at 100k listings under a
// distinct-query load put RSS at ~150 MiB; GOGC=50 everywhere cost ~12 %
// of the searches per second even on small catalogues, where memory is no
// concern (BENCHMARKS.md "Memory"). So serve keeps GOGC=100 and sets a soft
// memory limit: at least memFloor, or 4/3 of the live heap. A small node
// never reaches it; a big one collects once a third more than is live was
// allocated, as GOGC=33 would; the limit follows the live heap up so that
// the collector never runs flat out against a limit below what is live.
// At 1M listings (a live heap of ~150 MiB under 20 clients) 1.5 times let
// RSS reach 302 MiB; 4/3 held it at 258 MiB at the same searches per
// second (BENCHMARKS.md "The 1M catalogue").
//
// The floor was 80 MiB, then 64. At 100k listings under a distinct-query
// load the live heap is ~30-45 MB (the search index and the caches, sized
// for this: store.CacheMaxBytes, the search index's row cache), so the
// floor, not 4/3 of live, is the limit there, and the Go part of RSS
// follows it: 64 MiB took ~11 MiB off RSS for 3-6 % of the searches per
// second; 48 MiB then cost a third of them, the collector running every
// few megabytes allocated (BENCHMARKS.md "Memory at 100k listings", stop
// 39). Once a search allocated ~40 % less (stop 40) 48 MiB took ~12 MiB
// off for ~10 % of the searches per CPU-second against 64 (as many as
// before that work); under heavy CPU contention two runs of ten overshot
// to ~148 MiB, which an operator can bound with GOMEMLIMIT.
const (
	memFloor = 48 << 20
	// memTuneEvery is how often the limit follows the live heap.
	memTuneEvery = 10 * time.Second
)

// memoryLimit is the soft memory limit for a live heap of live bytes.
func memoryLimit(live uint64) int64 {
	return max(memFloor, int64(live/3*4))
}

// liveHeap reads the heap that was live at the end of the last collection.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// tuneMemory sets the memory limit at once, then every memTuneEvery until
// ctx ends. It is not run when GOGC or GOMEMLIMIT is set: the operator
// decides.
func tuneMemory(ctx context.Context, every time.Duration) {
	debug.SetMemoryLimit(memoryLimit(liveHeap()))
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			debug.SetMemoryLimit(memoryLimit(liveHeap()))
		}
	}
}
