package p2p

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// TestDHTPublisherBounds: puts run at most dhtWorkers at once, at most
// maxDHTPending wait (the longest waiting is dropped, and counted), a
// listing waits once whatever its updates (its newest record is put), and a
// tag is provided once per tagProvideEvery however many agents carry it.
func TestDHTPublisherBounds(t *testing.T) {
	gate := make(chan struct{})
	var running, most, dropped atomic.Int64
	var mu sync.Mutex
	putSeq := map[string]uint64{}
	provides := map[string]int{}
	now := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	d := newDHTPublisher(func(ctx context.Context, rec *agent.Record, _ []byte) {
		if r := running.Add(1); r > most.Load() {
			most.Store(r)
		}
		<-gate
		mu.Lock()
		putSeq[rec.ID] = rec.Seq
		mu.Unlock()
		running.Add(-1)
	}, func(_ context.Context, tag string) error {
		mu.Lock()
		provides[tag]++
		mu.Unlock()
		return nil
	}, func() time.Time { return *clock.Load() }, func() { dropped.Add(1) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for range dhtWorkers {
		go d.run(ctx)
	}
	rec := func(id string, seq uint64) *agent.Record {
		return &agent.Record{ID: id, Seq: seq, Tags: []string{"weather"}}
	}
	const n = maxDHTPending + 2_000
	for i := range n {
		d.add(rec(fmt.Sprintf("a-%05d", i), 1), nil)
	}
	if w := d.waiting(); w > maxDHTPending {
		t.Fatalf("%d puts wait, want at most %d", w, maxDHTPending)
	}
	// The newest of a waiting listing's records is the one put.
	d.add(rec(fmt.Sprintf("a-%05d", n-1), 2), nil)
	close(gate)
	// Every listing is put or dropped, none twice.
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := int64(len(putSeq)) + dropped.Load()
		mu.Unlock()
		if done == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d listings put or dropped; %d wait", done, n, d.waiting())
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	mu.Lock()
	defer mu.Unlock()
	if most.Load() > dhtWorkers {
		t.Errorf("%d puts ran at once, want at most %d", most.Load(), dhtWorkers)
	}
	if dropped.Load() < n-maxDHTPending-dhtWorkers {
		t.Errorf("dropped %d, want at least %d", dropped.Load(), n-maxDHTPending-dhtWorkers)
	}
	for i := n - maxDHTPending + dhtWorkers; i < n; i++ { // the longest waiting went, the newest stayed
		if _, ok := putSeq[fmt.Sprintf("a-%05d", i)]; !ok {
			t.Fatalf("listing %d of %d was dropped, want only the longest waiting dropped for room", i, n)
		}
	}
	if s := putSeq[fmt.Sprintf("a-%05d", n-1)]; s != 2 {
		t.Errorf("the updated listing was put at seq %d, want its newest (2)", s)
	}
	if provides["weather"] != 1 {
		t.Errorf("the tag was provided %d times for %d agents, want once", provides["weather"], len(putSeq))
	}
	// An hour on, the tag is provided again.
	later := now.Add(tagProvideEvery)
	clock.Store(&later)
	mu.Unlock()
	d.add(rec("b", 1), nil)
	deadline = time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		if provides["weather"] == 2 {
			break
		}
		mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the tag was not provided again after tagProvideEvery")
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// TestAnnounceStartsNoGoroutineARecord: a node with no DHT peers that
// announces thousands of its own records (a bulk import) keeps its
// goroutines flat: the DHT puts wait in the bounded publisher, not each in
// a goroutine of its own waiting 30 s for a routing table.
func TestAnnounceStartsNoGoroutineARecord(t *testing.T) {
	key, _ := genKey(t)
	n := startNode(t, key, Config{Cache: &memCache{}, NoSyncOnConnect: true})
	before := runtime.NumGoroutine()
	now := time.Now().UTC()
	const records = 2_000
	for i := range records {
		r, env := sealRecord(t, key, fmt.Sprintf("bot-%d", i), 1, now, time.Hour, "d")
		if err := n.Announce(t.Context(), r, env); err != nil {
			t.Fatal(err)
		}
	}
	if after := runtime.NumGoroutine(); after-before > 100 {
		t.Fatalf("goroutines %d -> %d after %d announces, want them flat", before, after, records)
	}
	if w := n.dhtPub.waiting(); w == 0 || w > records {
		t.Errorf("%d DHT puts wait, want the announced ones queued", w)
	}
}
