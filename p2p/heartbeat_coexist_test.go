package p2p

import (
	"context"
	"encoding/json"
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
	if a.publishV1() {
		t.Fatal("a node that heard no older node publishes on status/1")
	}

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
	if got := a.heartbeatInterval(time.Now()); got != base {
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

// TestIntervalFollowsThePlanet: the interval is the nodes heard over the
// budget, within the base and agent.MaxHeartbeatInterval, and the base
// while an older node is heard.
func TestIntervalFollowsThePlanet(t *testing.T) {
	n := &Node{cfg: Config{HeartbeatInterval: 10 * time.Second, HeartbeatBudget: 1}, adm: newAdmission(Admission{})}
	now := time.Now()
	hear := func(k int) { // nodes heard for longer than settledAfter
		for range k {
			_, p := genKey(t)
			for _, at := range []time.Time{now.Add(-settledAfter - time.Minute), now} {
				n.hb.rounds().allowDeclared(p.String(), at, at, time.Second, 10*time.Second)
			}
		}
	}
	if got := n.heartbeatInterval(now); got != 10*time.Second {
		t.Errorf("alone: %v, want the base 10s", got)
	}
	hear(49)
	if got := n.heartbeatInterval(now); got != 50*time.Second {
		t.Errorf("50 nodes at 1/s: %v, want 50s", got)
	}
	if got := n.heartbeatInterval(now.Add(countedFor)); got != 10*time.Second {
		t.Errorf("the nodes not heard for %v do not count: %v, want 10s", countedFor, got)
	}
	hear(1000)
	if got := n.heartbeatInterval(now); got != agent.MaxHeartbeatInterval {
		t.Errorf("1,050 nodes at 1/s: %v, want the cap %v", got, agent.MaxHeartbeatInterval)
	}
	n.oldNodeHeard(now)
	if got := n.heartbeatInterval(now); got != 10*time.Second {
		t.Errorf("with an older node heard: %v, want the base", got)
	}
}

// TestRoundsFollowTheDeclaredInterval: a status/2 round sooner than half
// the interval its sender declared is dropped but is no flood (a sender
// that restarted, or whose planet shrank, starts from a shorter one);
// rounds under the floor gap are a flood as before.
func TestRoundsFollowTheDeclaredInterval(t *testing.T) {
	b := newBeats()
	t0 := time.Now()
	const floor = 500 * time.Millisecond
	declared := 50 * time.Second
	if v := b.allowDeclared("p", t0, t0, floor, declared); v != beatOK {
		t.Fatalf("first round: %v", v)
	}
	for i := 1; i <= 5; i++ {
		at := t0.Add(time.Duration(i) * 4 * time.Second)
		if v := b.allowDeclared("p", at, at, floor, 10*time.Second); v != beatLate {
			t.Fatalf("round %d, %v after one that declared %v: %v, want dropped unpunished", i, at.Sub(t0), declared, v)
		}
	}
	at := t0.Add(declared / 2)
	if v := b.allowDeclared("p", at, at, floor, 10*time.Second); v != beatOK {
		t.Fatalf("a round half the declared interval later: %v", v)
	}
	for i := 1; i <= floodAfter+1; i++ {
		soon := at.Add(time.Duration(i) * time.Millisecond)
		v := b.allowDeclared("p", soon, soon, floor, 10*time.Second)
		if want := beatLate; i > floodAfter {
			if v != beatFlood {
				t.Fatalf("too-soon round %d: %v, want a flood", i, v)
			}
		} else if v != want {
			t.Fatalf("too-soon round %d: %v, want dropped", i, v)
		}
	}
}
