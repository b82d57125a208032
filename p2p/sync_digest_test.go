package p2p

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestPeerMetLaterSendsOnlyWhatIsLacking: a peer met after the mirror
// filled its shards from another (past the adoption window) is pulled
// whole once, but the 20 listings it shares with the first peer, which the
// mirror holds, cross the wire as digests only: no envelope the mirror
// already held is transferred, and its own 3 listings arrive.
func TestPeerMetLaterSendsOnlyWhatIsLacking(t *testing.T) {
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
	copyCache(t, aCache, bCache) // B has A's listings, as the mirror does
	fillSource(t, bKey, 3, bCache)
	before := m.SyncCounts()
	b := startNode(t, bKey, Config{Cache: bCache, NoSyncOnConnect: true})
	connect(t, m, b)
	waitfor.Until(t, 30*time.Second, "B's own listings", func() bool { return mirror.held() == 23 })
	waitfor.Until(t, 30*time.Second, "the sync with B to end", func() bool {
		return m.catalog.Running() == 0
	})
	after := m.SyncCounts()
	if known := after.Records["known/first"] - before.Records["known/first"]; known != 0 {
		t.Errorf("the sync with B transferred %d envelopes the mirror held, want 0", known)
	}
	if got := after.Records["new/first"] - before.Records["new/first"]; got != 3 {
		t.Errorf("the sync with B brought %d new listings, want 3", got)
	}
	if held := after.Records["held/first"] - before.Records["held/first"]; held != 20 {
		t.Errorf("the sync with B passed over %d held listings as digests, want 20", held)
	}
}

// TestQuotaRetryTransfersOnlyWhatWasRefused: a sync cut short by the quota
// of never-heard publishers keeps its cursor before the refused listings;
// asked again once their hosts are heard, it brings the refused ones and
// transfers none of those admitted the first time again.
func TestQuotaRetryTransfersOnlyWhatWasRefused(t *testing.T) {
	const hosts, each, quota = 3, 8, 10
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
	s := startNode(t, nil, Config{Cache: src, NoSyncOnConnect: true})
	mirror := &memCache{}
	m := startNode(t, nil, Config{Cache: mirror, NoSyncOnConnect: true, Admission: Admission{UnheardPerHour: quota}})
	connect(t, m, s)

	_, err := m.catalog.FeedSync(context.Background(), s.Host().ID())
	if !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("first sync: %v, want over the quota", err)
	}
	first := m.SyncCounts()
	admitted := first.Records["new/other"]
	if admitted != quota || mirror.held() != quota {
		t.Fatalf("first sync admitted %d (held %d), want the quota %d", admitted, mirror.held(), quota)
	}
	for _, p := range pubs {
		m.in.Hear(p, m.now())
	}
	if _, err := m.catalog.FeedSync(context.Background(), s.Host().ID()); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if mirror.held() != hosts*each {
		t.Fatalf("after the retry the mirror holds %d listings, want %d", mirror.held(), hosts*each)
	}
	second := m.SyncCounts()
	if known := second.Records["known/other"] - first.Records["known/other"]; known != 0 {
		t.Errorf("the retry transferred %d listings admitted the first time again, want 0", known)
	}
	if got := second.Records["new/other"] - first.Records["new/other"]; got != hosts*each-quota {
		t.Errorf("the retry brought %d listings, want the %d refused", got, hosts*each-quota)
	}
}

// TestPeersConnectedBeforeWatchingAreSynced: a peer identified before the
// node watches for peers (its bootstrap peer, dialled as soon as the host
// is up) is synced with too; before, no event came for it and the node
// could stay connected to its first peer without ever pulling its
// catalogue.
func TestPeersConnectedBeforeWatchingAreSynced(t *testing.T) {
	aKey, _ := genKey(t)
	aCache := &memCache{}
	fillSource(t, aKey, 5, aCache)
	a := startNode(t, aKey, Config{Cache: aCache, NoSyncOnConnect: true})
	mirror := &memCache{}
	m := startNode(t, nil, Config{Cache: mirror, NoSyncOnConnect: true, SyncInterval: time.Hour})
	connect(t, m, a)
	waitfor.Until(t, 30*time.Second, "A identified", func() bool {
		p, err := m.Host().Peerstore().SupportsProtocols(a.Host().ID(), SyncFeedProtocol)
		return err == nil && len(p) == 1
	})
	m.catalog.WatchPeers() // as New does, after the connection
	waitfor.Until(t, 30*time.Second, "A's listings", func() bool { return mirror.held() == 5 })
}
