package p2p

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// gossipMsg is a message on topic authored by author, as the validator
// sees it once GossipSub checked its signature.
func gossipMsg(topic string, author peer.ID, data []byte) *pubsub.Message {
	return &pubsub.Message{Message: &pb.Message{From: []byte(author), Data: data, Topic: &topic}}
}

// heartbeatOf is a status/2 heartbeat of author sent at at.
func heartbeatOf(t *testing.T, author peer.ID, at time.Time, interval time.Duration) []byte {
	t.Helper()
	b, err := json.Marshal(agent.Heartbeat{PeerID: author.String(), SentAt: at.UTC(), IntervalMS: interval.Milliseconds()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSybilHeartbeatsLeaveTheIntervalUnchanged: 200 fresh identities,
// each heartbeating (valid, signed, sent by itself), do not lengthen the
// interval this node declares; a host whose listing this node holds
// counts at once. Before, every heartbeat author counted: 200 of them
// took a node's interval from its base to 200 times the budget's share.
func TestSybilHeartbeatsLeaveTheIntervalUnchanged(t *testing.T) {
	const base = 2 * time.Second
	n := startNode(t, nil, Config{Cache: fakeCache{}, HeartbeatInterval: base, HeartbeatBudget: 0.5, NoSyncOnConnect: true})
	ctx := context.Background()
	now := time.Now()
	if got := n.beat.Interval(now); got != base {
		t.Fatalf("alone: interval %v, want the base %v", got, base)
	}
	for i := range 200 {
		_, sybil := genKey(t)
		if v := n.beat.Validate(ctx, sybil, gossipMsg(TopicStatus2, sybil, heartbeatOf(t, sybil, now, base))); v != pubsub.ValidationAccept {
			t.Fatalf("sybil %d's heartbeat: %v, want accepted (it is valid; it only must not count)", i, v)
		}
	}
	got := n.beat.Interval(time.Now())
	t.Logf("declared interval under 200 heartbeating Sybils: %v (base %v, budget %v a second)", got, base, n.cfg.HeartbeatBudget)
	if got != base {
		t.Fatalf("after 200 heartbeating identities the interval is %v, want still %v", got, base)
	}

	// A host whose listing this node holds counts: with this node, 2
	// nodes at 0.5 heartbeats a second is 4 s.
	key, host := genKey(t)
	rec, env := sealRecord(t, key, "held-listing", 1, now, time.Hour, "")
	if !n.deliver(ctx, pathGossip, host, rec, env) {
		t.Fatal("the host's listing was not taken in")
	}
	if v := n.beat.Validate(ctx, host, gossipMsg(TopicStatus2, host, heartbeatOf(t, host, now, base))); v != pubsub.ValidationAccept {
		t.Fatalf("the host's heartbeat: %v", v)
	}
	if got, want := n.beat.Interval(time.Now()), 2*base; got != want {
		t.Fatalf("with a host of a held listing the interval is %v, want %v", got, want)
	}
}

// TestOwnRecordsOverTheRateAreNotPenalised: a publisher's own valid
// records past the publisher rate are ignored (not forwarded) but cost it
// no score up to an allowance of half the rate, so an honest host whose
// paced records arrive in a clump is not graylisted; a burst far past
// the rate (a rogue, or an older node that does not pace) still costs a
// point a record, a forwarder over its own message rate still loses
// score, and a record its sender did not author is still rejected.
func TestOwnRecordsOverTheRateAreNotPenalised(t *testing.T) {
	const perMinute = 10
	n := startNode(t, nil, Config{Cache: &memCache{}, NoSyncOnConnect: true,
		Admission: Admission{PublisherPerMinute: perMinute, RelayerPerMinute: 2 * perMinute}})
	ctx := context.Background()
	now := time.Now()
	records := func(key crypto.PrivKey, prefix string, k int) [][]byte {
		out := make([][]byte, k)
		for i := range out {
			_, out[i] = sealRecord(t, key, fmt.Sprintf("%s-%d", prefix, i), 1, now, time.Hour, "")
		}
		return out
	}

	key, host := genKey(t)
	accepted := 0
	for _, env := range records(key, "own", perMinute+perMinute/2) {
		if n.validateRecordMsg(ctx, host, gossipMsg(TopicRecords, host, env)) == pubsub.ValidationAccept {
			accepted++
		}
	}
	if accepted != perMinute {
		t.Errorf("%d of the host's own records accepted, want the rate's %d (the rest ignored)", accepted, perMinute)
	}
	if p := n.AdmissionPenalty(host); p != 0 {
		t.Errorf("a host sending its own valid records half a rate over it lost %.1f points, want none", p)
	}
	for _, env := range records(key, "burst", 2*perMinute) {
		n.validateRecordMsg(ctx, host, gossipMsg(TopicRecords, host, env))
	}
	if p := n.AdmissionPenalty(host); p < perMinute {
		t.Errorf("a burst of %d own records far past the rate cost %.1f points, want at least %d", 2*perMinute, p, perMinute)
	}

	// A forwarder of another publisher's records past its own rate.
	otherKey, other := genKey(t)
	_, relay := genKey(t)
	for _, env := range records(otherKey, "relayed", 4*perMinute) {
		n.validateRecordMsg(ctx, relay, gossipMsg(TopicRecords, other, env))
	}
	if p := n.AdmissionPenalty(relay); p < perMinute {
		t.Errorf("a forwarder %d messages over its rate lost %.1f points, want at least %d", 2*perMinute, p, perMinute)
	}

	// A forged record: authored by one peer, published by another.
	_, forger := genKey(t)
	forged := records(otherKey, "forged", 1)[0]
	if v := n.validateRecordMsg(ctx, forger, gossipMsg(TopicRecords, forger, forged)); v != pubsub.ValidationReject {
		t.Errorf("a record sent as its author by a peer that is not its publisher: %v, want rejected", v)
	}
}

// stallCache is a host's store that stalls: every read and write of its
// local agents blocks until the caller gives up.
type stallCache struct {
	fakeCache
	mu      sync.Mutex
	stalled int // calls blocked
}

func (c *stallCache) stall(ctx context.Context) error {
	c.mu.Lock()
	c.stalled++
	c.mu.Unlock()
	<-ctx.Done()
	return ctx.Err()
}

func (c *stallCache) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stalled
}

func (c *stallCache) LocalCount(ctx context.Context) (int, error) { return 0, c.stall(ctx) }
func (c *stallCache) LocalNames(ctx context.Context, _ []string) (map[string]string, error) {
	return nil, c.stall(ctx)
}
func (c *stallCache) SetHealth(ctx context.Context, _ string, _ map[string]agent.Health) error {
	return c.stall(ctx)
}

// TestHeartbeatsLeaveWhileTheStoreStalls: a host whose store stalls every
// read of its local agents (an import, probes and syncs holding it) keeps
// heartbeating: a peer receives round after round. Before, a round read
// the hosted count and the names of new entries on its own path, and a
// stalled store stopped the heartbeats (and so the host's listings went
// stale everywhere).
func TestHeartbeatsLeaveWhileTheStoreStalls(t *testing.T) {
	key, hostID := genKey(t)
	local := hostedAgents(t, key, 3)
	health := func() map[string]agent.Health {
		out := map[string]agent.Health{}
		for id := range local {
			out[id] = agent.Health{State: agent.HealthHealthy, SuccessRate: 1}
		}
		return out
	}
	stalled := &stallCache{}
	const interval = 100 * time.Millisecond
	host := startNode(t, key, Config{Cache: stalled, HeartbeatInterval: interval, HealthSource: health, NoSyncOnConnect: true})
	listener := &hostCache{}
	peerNode := startNode(t, nil, Config{Cache: listener, HeartbeatInterval: interval, NoSyncOnConnect: true})
	connect(t, peerNode, host)

	const rounds = 5
	heard := func() int {
		listener.mu.Lock()
		defer listener.mu.Unlock()
		at := map[time.Time]bool{}
		for _, hb := range listener.seen {
			if hb.PeerID == hostID.String() {
				at[hb.SentAt] = true
			}
		}
		return len(at)
	}
	waitfor.Until(t, 30*time.Second, fmt.Sprintf("%d heartbeat rounds of a host whose store stalls", rounds), func() bool {
		return heard() >= rounds
	})
	if stalled.calls() == 0 {
		t.Fatal("the host never read its store: the test stalled nothing")
	}
}

// TestOwnGossipIsPacedAndTheRestSyncs: a node that announces 300 of its
// own records at once gossips no more than its pace, so its peer counts
// no flood and takes no point off its score, and the peer still holds all
// 300: what was not gossiped came by the peer's next sync of the node's
// feed. Before, all 300 were gossiped at once and the peer counted 180
// flood messages, each a point off the node's score (graylisting is at
// -80).
func TestOwnGossipIsPacedAndTheRestSyncs(t *testing.T) {
	const records = 300
	key, hostID := genKey(t)
	hostCache, peerCache := &memCache{}, &memCache{}
	host := startNode(t, key, Config{Cache: hostCache, SyncInterval: 200 * time.Millisecond})
	peerNode := startNode(t, nil, Config{Cache: peerCache, SyncInterval: 200 * time.Millisecond})
	connect(t, peerNode, host)
	waitfor.Until(t, 10*time.Second, "the peer in the host's records topic", func() bool {
		for _, p := range host.records.ListPeers() {
			if p == peerNode.Host().ID() {
				return true
			}
		}
		return false
	})

	ctx := context.Background()
	now := time.Now()
	for i := range records {
		rec, env := sealRecord(t, key, fmt.Sprintf("own-%03d", i), 1, now, time.Hour, "")
		opened, err := agent.Open(env, now)
		if err != nil {
			t.Fatal(err)
		}
		rec = opened
		if _, err := hostCache.Put(ctx, rec, env); err != nil {
			t.Fatal(err)
		}
		if err := host.Announce(ctx, rec, env); err != nil {
			t.Fatal(err)
		}
	}
	waitfor.Until(t, 30*time.Second, fmt.Sprintf("the peer holding all %d records", records), func() bool {
		return peerCache.held() >= records
	})
	if p := peerNode.AdmissionPenalty(hostID); p != 0 {
		t.Errorf("the peer took %.1f points off the host for its own records, want none", p)
	}
	if f := counterValue(peerNode.metrics.rejected.WithLabelValues(pathGossip, "flood")); f != 0 {
		t.Errorf("the peer counted %.0f flood messages from the host, want none", f)
	}
	if paced := counterValue(host.metrics.published.WithLabelValues("gossip", "paced")); paced < records/2 {
		t.Errorf("the host left %.0f of %d records to the sync, want those over its pace (a burst of %d, then %d a minute)", paced, records, ownGossipBurst, ownGossipPerMinute)
	}
}

// hostedAgents is n agent ids of key's host, with their names (as
// p2p/heartbeat's tests make them).
func hostedAgents(t *testing.T, key crypto.PrivKey, n int) map[string]string {
	t.Helper()
	out := make(map[string]string, n)
	for i := range n {
		name := fmt.Sprintf("%s-%04d", strings.Repeat("a", agent.MaxNameLen-5), i)
		id, err := agent.DeriveID(key.GetPublic(), name)
		if err != nil {
			t.Fatal(err)
		}
		out[id] = name
	}
	return out
}
