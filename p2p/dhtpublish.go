package p2p

import (
	"context"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Bounds of the DHT publisher. The DHT is the fallback road of a listing
// (gossip and sync carry it first, and the host puts it again when it
// re-signs at half its TTL), so what does not fit is dropped, never waited
// for: a bulk import of 20,000 agents started a goroutine per record,
// 4,155 of them waiting at once for a routing table, a third of the node's
// CPU (BENCHMARKS.md, "Import through a running node").
const (
	// dhtWorkers is how many puts run at once.
	dhtWorkers = 4
	// maxDHTPending is how many listings may wait for a put; past it the
	// longest waiting is dropped.
	maxDHTPending = 10_000
	// tagProvideEvery is how often this node tells the DHT again that it
	// provides a tag: a provider record names the node, not the agent, so
	// one provide a tag stands for all its agents of that tag (kad-dht
	// keeps provider records 48 h).
	tagProvideEvery = time.Hour
	// maxProvidedTags bounds the tags remembered as provided (tags are
	// the operator's own, but a node may host very many agents).
	maxProvidedTags = 10_000
)

// dhtItem is one listing waiting for its put.
type dhtItem struct {
	rec *agent.Record
	env []byte
}

// dhtPublisher puts this node's own records in the DHT in the background:
// at most dhtWorkers at once, one waiting put per listing (a newer record
// replaces an older one still waiting), at most maxDHTPending waiting, and
// each tag provided at most once per tagProvideEvery.
type dhtPublisher struct {
	put     func(ctx context.Context, rec *agent.Record, env []byte) // the value
	provide func(ctx context.Context, tag string) error              // this node as a provider of tag
	now     func() time.Time
	onDrop  func() // counts a put dropped for room

	mu       sync.Mutex
	pending  map[string]dhtItem // by listing id
	order    []string           // ids in the order they came; an id may recur (lazily skipped)
	provided map[string]time.Time
	wake     chan struct{}
}

func newDHTPublisher(put func(context.Context, *agent.Record, []byte), provide func(context.Context, string) error, now func() time.Time, onDrop func()) *dhtPublisher {
	return &dhtPublisher{put: put, provide: provide, now: now, onDrop: onDrop,
		pending: map[string]dhtItem{}, provided: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

// add queues rec's put; it never waits.
func (d *dhtPublisher) add(rec *agent.Record, env []byte) {
	d.mu.Lock()
	if _, waiting := d.pending[rec.ID]; !waiting {
		if len(d.pending) >= maxDHTPending {
			d.dropOldest()
		}
		d.order = append(d.order, rec.ID)
	}
	d.pending[rec.ID] = dhtItem{rec: rec, env: env}
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// dropOldest drops the longest-waiting put; d.mu is held.
func (d *dhtPublisher) dropOldest() {
	for len(d.order) > 0 {
		id := d.order[0]
		d.order = d.order[1:]
		if _, ok := d.pending[id]; ok {
			delete(d.pending, id)
			if d.onDrop != nil {
				d.onDrop()
			}
			return
		}
	}
}

// next takes the longest-waiting put, if any.
func (d *dhtPublisher) next() (dhtItem, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.order) > 0 {
		id := d.order[0]
		d.order = d.order[1:]
		if it, ok := d.pending[id]; ok {
			delete(d.pending, id)
			if len(d.order) == 0 {
				d.order = nil // let a drained backlog's array go
			}
			return it, true
		}
	}
	return dhtItem{}, false
}

// waiting is how many puts wait.
func (d *dhtPublisher) waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// dueTags is those of tags not provided within tagProvideEvery, now marked
// provided.
func (d *dhtPublisher) dueTags(tags []string) []string {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var due []string
	for _, t := range tags {
		if at, ok := d.provided[t]; ok && now.Sub(at) < tagProvideEvery {
			continue
		}
		if len(d.provided) >= maxProvidedTags {
			d.provided = map[string]time.Time{} // start over: at worst a tag is provided again
		}
		d.provided[t] = now
		due = append(due, t)
	}
	return due
}

// forgetTag unmarks tag as provided.
func (d *dhtPublisher) forgetTag(tag string) {
	d.mu.Lock()
	delete(d.provided, tag)
	d.mu.Unlock()
}

// run is one worker: it puts what waits until ctx ends.
func (d *dhtPublisher) run(ctx context.Context) {
	for {
		it, ok := d.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-d.wake:
				continue
			}
		}
		d.put(ctx, it.rec, it.env)
		if !it.rec.Tombstone {
			for _, t := range d.dueTags(it.rec.Tags) {
				if d.provide(ctx, t) != nil {
					d.forgetTag(t) // the next agent with the tag tries again
				}
			}
		}
		if ctx.Err() != nil {
			return
		}
		select { // pass the wake-up on: more may wait than this worker takes
		case d.wake <- struct{}{}:
		default:
		}
	}
}
