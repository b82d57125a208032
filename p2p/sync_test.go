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
	mu    sync.Mutex
	order [][]byte
	ids   map[string]bool
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
	c.mu.Unlock()
	return true, nil
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
	return c.order[from:to], next, nil
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
			m.adm.hear(p, m.now())
		}
	}()
	if err := m.Connect(context.Background(), peer.AddrInfo{ID: s.Host().ID(), Addrs: s.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	// Every heard host's listings; the quota of never-heard ones went to
	// the first host's first listings, before it was heard.
	want := (hosts - 1) * each
	deadline := time.Now().Add(30 * time.Second)
	for mirror.held() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the mirror holds %d listings, want %d", mirror.held(), want)
		}
		time.Sleep(10 * time.Millisecond) // polling interval
	}
	if got := mirror.held(); got > want {
		t.Fatalf("the mirror holds %d listings; the never-heard host's are over the quota of %d", got, quota)
	}
}

func refusedOverQuota(t *testing.T, n *Node) float64 {
	var out dto.Metric
	if err := n.metrics.rejected.WithLabelValues(pathSync, "quota").Write(&out); err != nil {
		t.Error(err)
		return 1
	}
	return out.GetCounter().GetValue()
}
