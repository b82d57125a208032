package p2p

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentsite/agentsite/agent"
)

// memCache is a Cache in memory: it keeps every record it is given, serves
// them for sync in arrival order.
type memCache struct {
	fakeCache
	mu     sync.Mutex
	order  [][]byte
	recIDs []string // the id of each of order: its change number is its index + 1
	ids    map[string]bool
	feed   string
	// cursors is where this cache's node got to in peers' feeds.
	cursors map[string]memCursor
	// served counts the envelopes served by sync (both protocols);
	// failAt, when positive, makes the page that would pass it fail once.
	served, failAt int
	calls          int // SyncChanges calls
	// pages is the size of each PutAll call; nonEmpty counts the pages
	// with envelopes served by sync (both protocols).
	pages    []int
	nonEmpty int
}

type memCursor struct {
	feed     string
	after    int64
	complete bool
}

func (c *memCache) Put(_ context.Context, rec *agent.Record, env []byte) (bool, error) {
	c.mu.Lock()
	if c.ids == nil {
		c.ids = map[string]bool{}
	}
	if c.ids[rec.ID] {
		c.mu.Unlock()
		return false, nil
	}
	c.ids[rec.ID] = true
	c.order = append(c.order, env)
	c.recIDs = append(c.recIDs, rec.ID)
	c.mu.Unlock()
	return true, nil
}

// PutAll notes the size of the page it is given (pages), then puts each
// record.
func (c *memCache) PutAll(ctx context.Context, recs []*agent.Record, envs [][]byte) ([]bool, []error) {
	c.mu.Lock()
	c.pages = append(c.pages, len(recs))
	c.mu.Unlock()
	return putEach(ctx, c.Put, recs, envs)
}

func (c *memCache) Envelopes(_ context.Context, after int64, _ string, limit int) ([][]byte, int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	from := min(int(after), len(c.order))
	to := min(from+limit, len(c.order))
	next := int64(to)
	if to == len(c.order) {
		next = 0
	}
	if c.failAt > 0 && c.served+to-from > c.failAt {
		c.failAt = 0
		return nil, 0, fmt.Errorf("the test cut the sync")
	}
	c.served += to - from
	if to > from {
		c.nonEmpty++
	}
	return c.order[from:to], next, nil
}

func (c *memCache) FeedID(context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.feed == "" {
		c.feed = fmt.Sprintf("feed-%p", c)
	}
	return c.feed, nil
}

func (c *memCache) SyncChanges(_ context.Context, after int64, lo, hi string, limit int) ([][]byte, int64, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if limit == 0 {
		return [][]byte{}, int64(len(c.order)), false, nil
	}
	envs, next := [][]byte{}, after
	for i := int(after); i < len(c.order); i++ {
		id := c.recIDs[i]
		if id < lo || (hi != "" && id >= hi) {
			next = int64(i + 1)
			continue
		}
		if len(envs) == limit {
			break
		}
		envs = append(envs, c.order[i])
		next = int64(i + 1)
	}
	if c.failAt > 0 && c.served+len(envs) > c.failAt {
		c.failAt = 0
		return nil, 0, false, fmt.Errorf("the test cut the sync")
	}
	c.served += len(envs)
	if len(envs) > 0 {
		c.nonEmpty++
	}
	return envs, next, next < int64(len(c.order)), nil
}

func (c *memCache) SyncCursor(_ context.Context, peer string, shard int) (string, int64, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.cursors[fmt.Sprint(peer, "/", shard)]
	return cur.feed, cur.after, cur.complete, nil
}

func (c *memCache) SetSyncCursor(_ context.Context, peer string, shard int, feed string, after int64, complete bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cursors == nil {
		c.cursors = map[string]memCursor{}
	}
	c.cursors[fmt.Sprint(peer, "/", shard)] = memCursor{feed, after, complete}
	return nil
}

func (c *memCache) servedCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served
}

func (c *memCache) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order)
}

// TestSyncRetriesWhenHostsAreHeard: a fresh mirror syncing a catalogue of
// hosts it has not heard yet takes only its quota of them at first; once
// their heartbeats arrive (here: the hosts are marked heard when the quota
// is full), the sync is asked again and the whole catalogue comes in.
// Listings of hosts nobody hears stay held to the quota.
func TestSyncRetriesWhenHostsAreHeard(t *testing.T) {
	const hosts, each, quota = 4, 10, 5
	src := &memCache{}
	var pubs []string
	now := time.Now().UTC()
	for i := 0; i < hosts; i++ {
		k, p := genKey(t)
		pubs = append(pubs, p.String())
		for j := 0; j < each; j++ {
			r, env := sealRecord(t, k, fmt.Sprintf("bot-%d", j), 1, now, time.Hour, "")
			if _, err := src.Put(context.Background(), r, env); err != nil {
				t.Fatal(err)
			}
		}
	}
	srcKey, _ := genKey(t)
	s, err := New(context.Background(), srcKey, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Cache: src, NoSyncOnConnect: true}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })

	mirror := &memCache{}
	mKey, _ := genKey(t)
	m, err := New(context.Background(), mKey, Config{
		ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Cache: mirror, HeartbeatInterval: 20 * time.Millisecond,
		Admission: Admission{UnheardPerHour: quota},
	}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	// The hosts' heartbeats "arrive" once the mirror has refused some of
	// their listings over the quota: all but the last host, never heard.
	go func() {
		for refusedOverQuota(t, m) == 0 {
			time.Sleep(5 * time.Millisecond) // polling interval
		}
		for _, p := range pubs[:hosts-1] {
			m.in.Hear(p, m.now())
		}
	}()
	if err := m.Connect(context.Background(), peer.AddrInfo{ID: s.Host().ID(), Addrs: s.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	// Every heard host's listings; of the never-heard host's, at most the
	// quota (which listings took it depends on the order they came in).
	deadline := time.Now().Add(30 * time.Second)
	for {
		by := mirror.heldBy(t)
		heard := 0
		for _, p := range pubs[:hosts-1] {
			heard += by[p]
		}
		if got := by[pubs[hosts-1]]; got > quota {
			t.Fatalf("the mirror holds %d listings of the never-heard host, over the quota of %d", got, quota)
		}
		if heard == (hosts-1)*each {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the mirror holds %d listings of heard hosts, want %d", heard, (hosts-1)*each)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
}

// heldBy counts the listings held per publisher.
func (c *memCache) heldBy(t *testing.T) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	by := map[string]int{}
	for _, env := range c.order {
		rec, err := agent.Open(env, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		by[rec.Publisher]++
	}
	return by
}

func refusedOverQuota(t *testing.T, n *Node) float64 {
	var out dto.Metric
	if err := n.metrics.rejected.WithLabelValues(pathSync, "quota").Write(&out); err != nil {
		t.Error(err)
		return 1
	}
	return out.GetCounter().GetValue()
}
