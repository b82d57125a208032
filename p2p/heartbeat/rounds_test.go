package heartbeat

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"

	"github.com/agentsite/agentsite/agent"
)

// hostCache is a Cache of a host: it counts what the heartbeat reads of
// its hosted listings and what is written on receipt.
type hostCache struct {
	fakeCache
	local map[string]string // id → name

	mu                sync.Mutex
	counts, nameCalls int
	namesRead         int // ids looked up
	seen              []agent.Heartbeat
	healthWrites      int
	seenCh            chan agent.Heartbeat
}

func (c *hostCache) LocalCount(context.Context) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts++
	return len(c.local), nil
}

func (c *hostCache) LocalNames(_ context.Context, ids []string) (map[string]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nameCalls++
	c.namesRead += len(ids)
	out := map[string]string{}
	for _, id := range ids {
		if name, ok := c.local[id]; ok {
			out[id] = name
		}
	}
	return out, nil
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

func (c *hostCache) SetHealth(context.Context, string, map[string]agent.Health) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.healthWrites++
	return nil
}

func (c *hostCache) reads() (counts, calls, names int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts, c.nameCalls, c.namesRead
}

// TestBigHostHeartbeatsWithoutReadingItsListings: a host of 20,000 agents
// reads each agent's name once, for the entries it sends as they change,
// a bounded share a round, and after that nothing but a count on refresh
// rounds; its rounds carry only what changed, and a refresh slice. Before,
// every round listed every hosted listing in full (ListLocal), and a host
// of 100k never heartbeat within its store deadline.
func TestBigHostHeartbeatsWithoutReadingItsListings(t *testing.T) {
	const agents = 20_000
	key, pid := genKey(t)
	local := hostedAgents(t, key, agents)
	cache := &hostCache{local: local}
	n := New(Config{Store: cache})
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	health := map[string]agent.Health{}
	for id := range local {
		health[id] = agent.Health{State: agent.HealthHealthy, SuccessRate: 1, CheckedAt: at}
	}
	base := agent.Heartbeat{PeerID: pid.String(), SentAt: at, IntervalMS: 10_000}
	ctx := context.Background()

	perRound := maxDeltaParts * agent.MaxHeartbeatHealth
	rounds := (agents + perRound - 1) / perRound
	for i := range rounds + refreshEvery {
		r, err := n.buildRound(ctx, base, health, []string{"/ip4/127.0.0.1/tcp/1"})
		if err != nil {
			t.Fatal(err)
		}
		if want := min(perRound, max(agents-i*perRound, 0)); len(r.delta) != want {
			t.Fatalf("round %d: %d changed entries, want %d", i, len(r.delta), want)
		}
		msgs, err := r.messages()
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) > maxHeartbeatParts {
			t.Fatalf("round %d: %d messages, over the %d a receiver takes", i, len(msgs), maxHeartbeatParts)
		}
		if i >= rounds && i%refreshEvery != 0 && len(msgs) != 1 {
			t.Fatalf("round %d, nothing changed: %d messages, want 1", i, len(msgs))
		}
	}
	counts, calls, names := cache.reads()
	if names != agents {
		t.Errorf("the rounds looked up %d names, want each of the %d agents once", names, agents)
	}
	if calls != rounds {
		t.Errorf("%d name look-ups, want %d (one per round while entries were new)", calls, rounds)
	}
	if want := (rounds+refreshEvery-1)/refreshEvery + 1; counts > want {
		t.Errorf("%d counts in %d rounds, want at most %d (refresh rounds only)", counts, rounds+refreshEvery, want)
	}

	// One agent's health changes: the next round carries it alone.
	var one string
	for id := range local {
		one = id
		break
	}
	health[one] = agent.Health{State: agent.HealthFailing, CheckedAt: at.Add(time.Minute)}
	r, err := n.buildRound(ctx, base, health, []string{"/ip4/127.0.0.1/tcp/1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.delta) != 1 || r.delta[0].ID != one || r.delta[0].State != agent.HealthFailing {
		t.Fatalf("after one change the round carries %d entries (%v), want that one", len(r.delta), r.delta)
	}
	if _, _, after := cache.reads(); after != names {
		t.Errorf("a known agent's change looked up %d names", after-names)
	}
}

// statusMsg is a verified heartbeat as the read loop hands it on.
func statusMsg(topic string, hb agent.Heartbeat) *pubsub.Message {
	return &pubsub.Message{Message: &pb.Message{Topic: &topic}, ValidatorData: &hb}
}

// TestUnchangedHeartbeatsWriteNoHealth: on receipt, a round without
// changes writes no health, a refresh slice is written once however
// often it comes, a changed one again; a newer node's copy on status/1 is
// not read at all (its status/2 round is). Before, every heartbeat wrote
// the health of all its sender's agents.
func TestUnchangedHeartbeatsWriteNoHealth(t *testing.T) {
	key, pid := genKey(t)
	local := hostedAgents(t, key, 2)
	var entries []agent.HostedHealth
	for id, name := range local {
		entries = append(entries, agent.HostedHealth{ID: id, Name: name, Health: agent.Health{State: agent.HealthHealthy, SuccessRate: 1}})
	}
	cache := &hostCache{}
	n := New(Config{Store: cache})
	ctx := context.Background()
	at := time.Now().UTC()
	hb := agent.Heartbeat{PeerID: pid.String(), SentAt: at, IntervalMS: 10_000, Digest: "1"}
	writes := func() int {
		cache.mu.Lock()
		defer cache.mu.Unlock()
		return cache.healthWrites
	}

	for range 3 {
		n.Handle(ctx, statusMsg(TopicStatus2, hb))
	}
	if w := writes(); w != 0 {
		t.Fatalf("rounds without changes wrote health %d times", w)
	}
	slice := hb
	slice.Health, slice.Slice = entries, &agent.HealthSlice{Index: 0, Count: 1}
	for range 3 {
		n.Handle(ctx, statusMsg(TopicStatus2, slice))
	}
	if w := writes(); w != 1 {
		t.Fatalf("the same refresh slice three times: %d health writes, want 1", w)
	}
	slice.Health = append([]agent.HostedHealth(nil), entries...)
	slice.Health[0].State = agent.HealthFailing
	n.Handle(ctx, statusMsg(TopicStatus2, slice))
	if w := writes(); w != 2 {
		t.Fatalf("a changed refresh slice: %d health writes, want 2", w)
	}
	copyV1 := hb
	copyV1.Health = entries
	n.Handle(ctx, statusMsg(TopicStatus, copyV1))
	if w, seen := writes(), len(cache.seen); w != 2 || seen != 7 {
		t.Fatalf("a newer node's status/1 copy was read: %d health writes, %d heartbeats recorded", w, seen)
	}
	old := agent.Heartbeat{PeerID: pid.String(), SentAt: at, Health: entries} // an older node: no interval
	n.Handle(ctx, statusMsg(TopicStatus, old))
	if w, seen := writes(), len(cache.seen); w != 3 || seen != 8 {
		t.Fatalf("an older node's heartbeat: %d health writes, %d heartbeats recorded; want 3, 8", w, seen)
	}
}

// TestHeartbeat2Encoding: a status/2 round says its interval and digest,
// and leaves the addresses out when they did not change.
func TestHeartbeat2Encoding(t *testing.T) {
	_, pid := genKey(t)
	n := New(Config{Store: &hostCache{}})
	at := time.Now().UTC()
	base := agent.Heartbeat{PeerID: pid.String(), SentAt: at, IntervalMS: 25_000}
	addrs := []string{"/ip4/127.0.0.1/tcp/1"}
	var got []agent.Heartbeat
	for range 2 {
		r, err := n.buildRound(context.Background(), base, nil, addrs)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := r.messages()
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%d messages, %v", len(msgs), err)
		}
		var hb agent.Heartbeat
		if err := json.Unmarshal(msgs[0], &hb); err != nil {
			t.Fatal(err)
		}
		if err := checkHeartbeat2(&hb); err != nil {
			t.Fatal(err)
		}
		got = append(got, hb)
	}
	if len(got[0].Addrs) != 1 || got[1].Addrs != nil {
		t.Errorf("addrs %v then %v, want them in the first round only", got[0].Addrs, got[1].Addrs)
	}
	if got[1].Interval() != 25*time.Second || got[1].Digest == "" {
		t.Errorf("interval %v, digest %q", got[1].Interval(), got[1].Digest)
	}
}
