package p2p

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// TestOldAndNewHeartbeatsCoexist: a node of this version heartbeats on
// agentsite/status/2 only while every node it hears does; once it hears a
// heartbeat of an older node (status/1, no interval), it records that
// node as it always did, and publishes on status/1 too, with its
// addresses, at its base interval, so the older node keeps it online.
// Before, a node spoke status/1 only, and a status/2 node was never heard.
func TestOldAndNewHeartbeatsCoexist(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cache := &hostCache{seenCh: make(chan agent.Heartbeat, 64)}
	key, _ := genKey(t)
	const base = 200 * time.Millisecond
	a, err := New(ctx, key, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Cache: cache, HeartbeatInterval: base, HeartbeatBudget: 1, NoSyncOnConnect: true}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })

	// The older node: GossipSub on status/1 only.
	oldKey, oldID := genKey(t)
	h, err := libp2p.New(libp2p.Identity(oldKey), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	ps, err := pubsub.NewGossipSub(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	topic, err := ps.Join(TopicStatus)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := topic.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Connect(ctx, peer.AddrInfo{ID: a.host.ID(), Addrs: a.host.Addrs()}); err != nil {
		t.Fatal(err)
	}

	// The older node heartbeats until the new one has recorded it.
	heardOld := make(chan struct{})
	go func() {
		tick := time.NewTicker(3 * base)
		defer tick.Stop()
		for {
			b, _ := json.Marshal(agent.Heartbeat{PeerID: oldID.String(), Version: "old", Addrs: []string{"/ip4/127.0.0.1/tcp/9"}, SentAt: time.Now().UTC()})
			_ = topic.Publish(ctx, b)
			select {
			case <-heardOld:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	for recorded := false; !recorded; {
		select {
		case hb := <-cache.seenCh:
			if recorded = hb.PeerID == oldID.String(); recorded && (hb.IntervalMS != 0 || hb.Version != "old" || len(hb.Addrs) != 1) {
				t.Errorf("the older node's heartbeat was recorded as %+v", hb)
			}
		case <-ctx.Done():
			t.Fatal("the older node's heartbeats were never recorded")
		}
	}
	close(heardOld)
	if got := a.beat.Interval(time.Now()); got != base {
		t.Errorf("with an older node heard the interval is %v, want the base %v", got, base)
	}

	// The new node's rounds reach the older node on status/1, whole.
	for {
		msg, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no heartbeat of the new node on status/1: %v", err)
		}
		if msg.GetFrom() != a.host.ID() {
			continue
		}
		var hb agent.Heartbeat
		if err := json.Unmarshal(msg.Data, &hb); err != nil {
			t.Fatal(err)
		}
		if len(hb.Addrs) == 0 || hb.PeerID != a.PeerID() || hb.Interval() != base {
			t.Fatalf("the new node's status/1 heartbeat is %+v; want its addresses and interval", hb)
		}
		break
	}
}

// hostCache is a Cache that records the heartbeats it is told of
// (p2p/heartbeat's tests have the one that counts reads too).
type hostCache struct {
	fakeCache

	mu     sync.Mutex
	seen   []agent.Heartbeat
	seenCh chan agent.Heartbeat
}

func (c *hostCache) NodeSeen(_ context.Context, hb agent.Heartbeat) error {
	c.mu.Lock()
	c.seen = append(c.seen, hb)
	ch := c.seenCh
	c.mu.Unlock()
	if ch != nil {
		select {
		case ch <- hb:
		default:
		}
	}
	return nil
}
