package p2p

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p/catalogsync"
)

// fillSource makes a cache of n listings signed by key.
func fillSource(t *testing.T, key crypto.PrivKey, n int, c *memCache) {
	t.Helper()
	now := time.Now().UTC()
	for i := 0; i < n; i++ {
		r, env := sealRecord(t, key, fmt.Sprintf("bot-%d", i), 1, now, time.Hour, "")
		if _, err := c.Put(context.Background(), r, env); err != nil {
			t.Fatal(err)
		}
	}
}

// copyCache puts every record of from into to, in from's order.
func copyCache(t *testing.T, from, to *memCache) {
	t.Helper()
	for _, env := range from.order {
		rec, err := agent.Open(env, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := to.Put(context.Background(), rec, env); err != nil {
			t.Fatal(err)
		}
	}
}

func startNode(t *testing.T, key crypto.PrivKey, cfg Config) *Node {
	t.Helper()
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	if key == nil {
		key, _ = genKey(t)
	}
	n, err := New(context.Background(), key, cfg, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func connect(t *testing.T, from, to *Node) {
	t.Helper()
	if err := from.Connect(context.Background(), peer.AddrInfo{ID: to.Host().ID(), Addrs: to.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
}

// TestFeedSyncResumesAfterCut: a sync cut part-way (the page past 200
// envelopes fails, and the mirror restarts on the same cache) resumes from
// the page it stopped at: the source serves each envelope once.
func TestFeedSyncResumesAfterCut(t *testing.T) {
	const n = 500
	srcKey, _ := genKey(t)
	src := &memCache{failAt: 200}
	fillSource(t, srcKey, n, src)
	s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true})

	mirror := &memCache{}
	m1 := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour})
	connect(t, m1, s)
	waitfor.Until(t, 30*time.Second, "the cut", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.failAt == 0
	})
	held := mirror.held()
	if held == 0 || held >= n {
		t.Fatalf("the mirror holds %d of %d listings after the cut", held, n)
	}
	_ = m1.Close() // a restart, on the same cache

	m2 := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour})
	connect(t, m2, s)
	waitfor.Until(t, 30*time.Second, "the mirror to fill", func() bool { return mirror.held() == n })
	if got := src.servedCount(); got > n {
		t.Fatalf("the source served %d envelopes for %d listings (%d held at the cut): the sync did not resume", got, n, held)
	}
}

// TestSyncHandsTheCacheWholePages: each page of a sync, over 1.1.0 and
// 1.0.0, reaches the cache in one PutAll call (the store writes it in one
// transaction), never a record at a time.
func TestSyncHandsTheCacheWholePages(t *testing.T) {
	const n = 300
	for _, proto := range []string{SyncFeedProtocol, SyncProtocol} {
		t.Run(strings.TrimPrefix(proto, "/agentsite/"), func(t *testing.T) {
			srcKey, _ := genKey(t)
			src := &memCache{}
			fillSource(t, srcKey, n, src)
			s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true})
			if proto == SyncProtocol {
				s.Host().RemoveStreamHandler(SyncFeedProtocol)
			}
			mirror := &memCache{}
			m := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour})
			connect(t, m, s)
			waitfor.Until(t, 30*time.Second, "the mirror to fill", func() bool { return mirror.held() == n })
			mirror.mu.Lock()
			pages := append([]int(nil), mirror.pages...)
			mirror.mu.Unlock()
			src.mu.Lock()
			served := src.nonEmpty
			src.mu.Unlock()
			total := 0
			for _, size := range pages {
				if size < 1 || size > catalogsync.PageSize {
					t.Errorf("a PutAll of %d records; want 1..%d", size, catalogsync.PageSize)
				}
				total += size
			}
			if total != n || len(pages) != served {
				t.Fatalf("the cache got %d records in %d PutAll calls (%v), for %d pages served of %d listings: want each page in one call",
					total, len(pages), pages, served, n)
			}
		})
	}
}

// TestJoinerSplitsWork: a joiner connected to three sources of the same
// catalogue gets each listing about once, and later rounds pull nothing
// again.
func TestJoinerSplitsWork(t *testing.T) {
	const n = 600
	pubKey, _ := genKey(t)
	first := &memCache{}
	fillSource(t, pubKey, n, first)
	var srcs []*memCache
	var nodes []*Node
	for i := 0; i < 3; i++ {
		c := first
		if i > 0 {
			c = &memCache{}
			copyCache(t, first, c)
		}
		srcs = append(srcs, c)
		nodes = append(nodes, startNode(t, nil, Config{Cache: c, NoSyncOnConnect: true}))
	}
	mirror := &memCache{}
	m := startNode(t, nil, Config{Cache: mirror, SyncInterval: 20 * time.Millisecond,
		Admission: Admission{UnheardPerHour: 10 * n}})
	errs := make(chan error, len(nodes))
	for _, s := range nodes {
		go func() {
			errs <- m.Connect(context.Background(), peer.AddrInfo{ID: s.Host().ID(), Addrs: s.Host().Addrs()})
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Until(t, 30*time.Second, "the mirror to fill", func() bool { return mirror.held() == n })
	served := func() int {
		total := 0
		for _, c := range srcs {
			total += c.servedCount()
		}
		return total
	}
	if total := served(); total > n*13/10 {
		t.Fatalf("the three sources served %d envelopes for %d listings", total, n)
	}
	// Two more rounds with every source (a head request each, at least)
	// pull nothing again.
	calls := make([]int, len(srcs))
	for i, c := range srcs {
		c.mu.Lock()
		calls[i] = c.calls
		c.mu.Unlock()
	}
	waitfor.Until(t, 30*time.Second, "two more rounds", func() bool {
		for i, c := range srcs {
			c.mu.Lock()
			more := c.calls - calls[i]
			c.mu.Unlock()
			if more < 2 {
				return false
			}
		}
		return true
	})
	if total := served(); total > n*13/10 {
		t.Fatalf("after two more rounds, the three sources served %d envelopes for %d listings", total, n)
	}
}

// TestAntiEntropyRepairsLostGossip: a record that reached a peer but
// never this node (its gossip lost) arrives through the periodic sync on
// the connection that stays up.
func TestAntiEntropyRepairsLostGossip(t *testing.T) {
	srcKey, _ := genKey(t)
	src := &memCache{}
	fillSource(t, srcKey, 10, src)
	s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true})
	mirror := &memCache{}
	m := startNode(t, nil, Config{Cache: mirror, SyncInterval: 20 * time.Millisecond})
	connect(t, m, s)
	waitfor.Until(t, 30*time.Second, "the first sync", func() bool { return mirror.held() == 10 })

	// The source gets a record by a path the mirror does not see (its
	// gossip to the mirror lost): only the source's cache has it.
	r, env := sealRecord(t, srcKey, "late-bot", 1, time.Now().UTC(), time.Hour, "")
	if _, err := src.Put(context.Background(), r, env); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 30*time.Second, "the lost record to be repaired", func() bool {
		mirror.mu.Lock()
		defer mirror.mu.Unlock()
		return mirror.ids[r.ID]
	})
}

// TestFeedSyncRefusesOversizedPages: a server that announces more than a
// page of records, or a frame longer than a record may be, ends the sync
// before the client allocates it.
func TestFeedSyncRefusesOversizedPages(t *testing.T) {
	for name, page := range map[string]string{
		"count": `{"feed":"x","next":1,"count":65}` + "\n",
		"frame": `{"feed":"x","next":1,"count":1}` + "\n" + string(binary.AppendUvarint(nil, 1<<30)),
	} {
		t.Run(name, func(t *testing.T) {
			s := startNode(t, nil, Config{Cache: &memCache{}, NoSyncOnConnect: true})
			s.Host().SetStreamHandler(SyncFeedProtocol, func(st network.Stream) {
				defer st.Close()
				r := bufio.NewReader(st)
				for {
					if _, err := r.ReadSlice('\n'); err != nil {
						return
					}
					if _, err := io.WriteString(st, page); err != nil {
						return
					}
				}
			})
			m := startNode(t, nil, Config{Cache: &memCache{}, NoSyncOnConnect: true})
			connect(t, m, s)
			_, err := m.catalog.FeedSync(context.Background(), s.Host().ID())
			if err == nil || !strings.Contains(err.Error(), "oversized") {
				t.Fatalf("FeedSync = %v, want an oversized page refused", err)
			}
		})
	}
}

// TestPeerMetLaterIsPulledWhole: a peer that connects after the mirror
// filled its shards from another (past the adoption window) is pulled
// whole once: its own listings, which nobody relayed, arrive.
func TestPeerMetLaterIsPulledWhole(t *testing.T) {
	aKey, _ := genKey(t)
	aCache := &memCache{}
	fillSource(t, aKey, 20, aCache)
	a := startNode(t, aKey, Config{Cache: aCache, NoSyncOnConnect: true})
	mirror := &memCache{}
	m := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour})
	m.catalog.SetAdoptWindow(0) // every later peer is past the window
	connect(t, m, a)
	waitfor.Until(t, 30*time.Second, "the fill from A", func() bool { return mirror.held() == 20 })

	bKey, _ := genKey(t)
	bCache := &memCache{}
	now := time.Now().UTC()
	for i := 0; i < 15; i++ {
		r, env := sealRecord(t, bKey, fmt.Sprintf("b-bot-%d", i), 1, now, time.Hour, "")
		if _, err := bCache.Put(context.Background(), r, env); err != nil {
			t.Fatal(err)
		}
	}
	b := startNode(t, bKey, Config{Cache: bCache, NoSyncOnConnect: true})
	connect(t, m, b)
	waitfor.Until(t, 30*time.Second, "B's own listings", func() bool { return mirror.held() == 35 })
}
