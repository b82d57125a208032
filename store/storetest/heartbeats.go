package storetest

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// heartbeatCases: what receiving heartbeats costs the store, and what the
// heartbeat reads of this node's own listings: both once grew with the
// listings held, and a host of 100k agents stopped heartbeating.
var heartbeatCases = []testCase{
	{"SinkUnchangedHeartbeatWritesNothing", testSinkUnchangedHeartbeatWritesNothing},
	{"SinkSweepFollowsDeclaredInterval", testSinkSweepFollowsDeclaredInterval},
	{"LocalNamesOfTheGivenIdsOnly", testLocalNames},
	{"SinkPutRacingAHeartbeat", testSinkPutRacingAHeartbeat},
}

// testSinkPutRacingAHeartbeat: a listing stored stale while its host's
// heartbeat turned the host's listings online (here: the row still says
// stale when Put reads it) is turned online by Put, since the host's next,
// unchanged heartbeat writes nothing. TestPartitionAndHeal found it.
func testSinkPutRacingAHeartbeat(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, host := newPublisher(t), newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return t0 }}
	if err := sink.NodeSeen(ctx, heartbeat(host, t0, 1)); err != nil {
		t.Fatal(err)
	}
	row := nodeRow(t, s, host)
	row.Status = store.StatusStale // as Put reads it, before the heartbeat's write
	if err := s.UpsertNode(ctx, row); err != nil {
		t.Fatal(err)
	}
	rec, env := host.seal(t, t0, agent.Record{Name: "racing-agent", ExpiresAt: t0.Add(24 * time.Hour)})
	if _, err := sink.Put(ctx, rec, env); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "stored while its host was heard", rec.ID, store.StatusOnline)
}

// writeCounter is a Network that counts the writes that reach it.
type writeCounter struct {
	store.Network
	n atomic.Int64
}

func (w *writeCounter) UpsertRecord(ctx context.Context, l store.Listing) error {
	w.n.Add(1)
	return w.Network.UpsertRecord(ctx, l)
}

func (w *writeCounter) UpsertNode(ctx context.Context, n store.Node) error {
	w.n.Add(1)
	return w.Network.UpsertNode(ctx, n)
}

func (w *writeCounter) SetHostStatus(ctx context.Context, host, status string, lastSeen time.Time) (int, error) {
	w.n.Add(1)
	return w.Network.SetHostStatus(ctx, host, status, lastSeen)
}

func (w *writeCounter) SetHealth(ctx context.Context, host string, h map[string]agent.Health) (int, error) {
	w.n.Add(1)
	return w.Network.SetHealth(ctx, host, h)
}

func (w *writeCounter) TouchNodes(ctx context.Context, seen map[string]time.Time) error {
	w.n.Add(1)
	return w.Network.TouchNodes(ctx, seen)
}

func nodeRow(t *testing.T, s store.Store, p *publisher) store.Node {
	t.Helper()
	nodes, err := s.GetNodes(testContext(t), []string{p.peer})
	if err != nil || len(nodes) != 1 {
		t.Fatalf("GetNodes(%s) = %v, %v; want its row", p.peer, nodes, err)
	}
	return nodes[0]
}

// testSinkUnchangedHeartbeatWritesNothing: the first heartbeat of a node
// writes its row and turns its listings online; the next ones, saying the
// same (status/2 leaves the addresses out), write nothing, and the sweep
// still judges the node by the last one heard. Its lazy flush writes when
// it was heard, one statement for every node; a silent node turns stale,
// and its next heartbeat writes again.
func testSinkUnchangedHeartbeatWritesNothing(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, host := newPublisher(t), newPublisher(t)
	w := &writeCounter{Network: s}
	clock := t0
	sink := &store.Sink{Store: w, SelfID: self.peer, Now: func() time.Time { return clock }}
	rec, env := host.seal(t, t0, agent.Record{Name: "heard-agent", ExpiresAt: t0.Add(24 * time.Hour)})
	if _, err := sink.Put(ctx, rec, env); err != nil {
		t.Fatal(err)
	}
	hb := heartbeat(host, t0, 1)
	hb.IntervalMS = 10_000
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "after the first heartbeat", rec.ID, store.StatusOnline)
	w.n.Store(0)

	hb.Addrs = nil // status/2: unchanged addresses are left out
	var last time.Time
	for i := 1; i <= 7; i++ {
		clock = t0.Add(time.Duration(i) * 10 * time.Second)
		last = clock
		hb.Load = float64(i) / 10 // the load moves all the time; it is written lazily
		if err := sink.NodeSeen(ctx, hb); err != nil {
			t.Fatal(err)
		}
	}
	if n := w.n.Load(); n != 0 {
		t.Fatalf("7 unchanged heartbeats made %d writes, want 0", n)
	}
	// 25 s after the last heartbeat, 95 s after the row was written: a
	// sweep of the rows alone would find it silent for 30 s. The row lags
	// by over a minute, so the sweep writes it.
	clock = last.Add(25 * time.Second)
	if err := sink.Sweep(ctx, clock, 30*time.Second, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	if got := nodeRow(t, s, host); got.Status != store.StatusOnline || !got.LastHeartbeat.Equal(last) || len(got.Addrs) != 1 {
		t.Fatalf("after the sweep the row is %+v; want online, last heartbeat %v (flushed), its addresses kept", got, last)
	}
	wantStatus(t, s, "after the sweep", rec.ID, store.StatusOnline)
	if n := w.n.Load(); n != 1 {
		t.Errorf("the sweep made %d writes, want 1 (the flush)", n)
	}

	clock = last.Add(31 * time.Second)
	if err := sink.Sweep(ctx, clock, 30*time.Second, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "silent for 31 s", rec.ID, store.StatusStale)
	w.n.Store(0)
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "heard again", rec.ID, store.StatusOnline)
	if w.n.Load() == 0 {
		t.Error("the heartbeat after a silence wrote nothing")
	}
	if got := nodeRow(t, s, host); got.Status != store.StatusOnline || len(got.Addrs) != 1 {
		t.Errorf("heard again, the row is %+v", got)
	}
	w.n.Store(0)
	hb.Version = "newer"
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if got := nodeRow(t, s, host); got.Version != "newer" || w.n.Load() == 0 {
		t.Errorf("a changed heartbeat: row %+v after %d writes", got, w.n.Load())
	}
}

// testSinkSweepFollowsDeclaredInterval: a node that says it heartbeats
// every minute is stale after three minutes of silence, not after this
// node's own threshold.
func testSinkSweepFollowsDeclaredInterval(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, host := newPublisher(t), newPublisher(t)
	clock := t0
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return clock }}
	rec, env := host.seal(t, t0, agent.Record{Name: "slow-host-agent", ExpiresAt: t0.Add(24 * time.Hour)})
	if _, err := sink.Put(ctx, rec, env); err != nil {
		t.Fatal(err)
	}
	hb := heartbeat(host, t0, 1)
	hb.IntervalMS = time.Minute.Milliseconds()
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if err := sink.Sweep(ctx, t0.Add(2*time.Minute+59*time.Second), 30*time.Second, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "silent for under 3 of its intervals", rec.ID, store.StatusOnline)
	if err := sink.Sweep(ctx, t0.Add(3*time.Minute+time.Second), 30*time.Second, time.Hour, 0); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "silent for 3 of its intervals", rec.ID, store.StatusStale)
}

// testLocalNames: the names of the hosted listings among the ids asked
// for, not another host's, not a deleted one.
func testLocalNames(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, other := newPublisher(t), newPublisher(t)
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return t0 }}
	var ids []string
	for _, name := range []string{"own-one", "own-two", "own-gone"} {
		rec, env := self.seal(t, t0, agent.Record{Name: name})
		if _, err := sink.Put(ctx, rec, env); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rec.ID)
	}
	gone, env := self.seal(t, t0, agent.Record{Name: "own-gone", Seq: 2, Tombstone: true})
	if _, err := sink.Put(ctx, gone, env); err != nil {
		t.Fatal(err)
	}
	theirs, env := other.seal(t, t0, agent.Record{Name: "their-agent"})
	if _, err := sink.Put(ctx, theirs, env); err != nil {
		t.Fatal(err)
	}
	got, err := sink.LocalNames(ctx, []string{ids[0], ids[2], theirs.ID, "no-such-id"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[ids[0]] != "own-one" {
		t.Fatalf("LocalNames = %v, want only own-one", got)
	}
	if n, err := sink.LocalCount(ctx); err != nil || n != 2 {
		t.Fatalf("LocalCount = %d, %v; want 2", n, err)
	}
}
