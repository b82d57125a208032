package main

import (
	"context"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		live uint64
		want int64
	}{
		{0, memFloor},
		{30 << 20, memFloor},
		{memFloor / 4 * 3, memFloor},
		{96 << 20, 128 << 20},
		{3 << 30, 4 << 30},
	} {
		if got := memoryLimit(c.live); got != c.want {
			t.Errorf("memoryLimit(%d MiB) = %d MiB, want %d MiB", c.live>>20, got>>20, c.want>>20)
		}
	}
}

// The limit is set at once, and follows the live heap up: a node whose
// live heap outgrows the floor must not have its collector run flat out.
func TestTuneMemoryFollowsLiveHeap(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	debug.SetMemoryLimit(math.MaxInt64)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); tuneMemory(ctx, 10*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })

	waitLimit := func(what string, ok func(int64) bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			got := debug.SetMemoryLimit(-1)
			if ok(got) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("memory limit %d MiB: want %s", got>>20, what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitLimit("at least the floor, set at once", func(l int64) bool { return l >= memFloor && l < math.MaxInt64 })

	live := make([]byte, 96<<20)
	for i := range live {
		live[i] = byte(i)
	}
	runtime.GC()
	waitLimit("at least 4/3 × 96 MiB once 96 MiB are live", func(l int64) bool { return l >= 128<<20 })
	runtime.KeepAlive(live)
}
