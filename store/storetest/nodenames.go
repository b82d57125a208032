package storetest

import (
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// nodeNameCases: a node's name, a label for people, as its heartbeat says
// it.
var nodeNameCases = []testCase{
	{"SinkStoresNodeName", testSinkStoresNodeName},
	{"SharedNodeNames", testSharedNodeNames},
}

// testSinkStoresNodeName: the name a heartbeat carries is stored on the
// node's row; the same name again writes nothing (an unchanged heartbeat
// stays free), a new name writes once.
func testSinkStoresNodeName(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now()
	self, host := newPublisher(t), newPublisher(t)
	w := &writeCounter{Network: s}
	clock := t0
	sink := &store.Sink{Store: w, SelfID: self.peer, Now: func() time.Time { return clock }}
	hb := heartbeat(host, t0, 0)
	hb.IntervalMS = 10_000
	hb.Name = "node-b"
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if got := nodeRow(t, s, host); got.Name != "node-b" {
		t.Fatalf("row %+v, want the name node-b", got)
	}
	w.n.Store(0)
	hb.Addrs = nil
	clock = t0.Add(10 * time.Second)
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if n := w.n.Load(); n != 0 {
		t.Fatalf("an unchanged heartbeat with a name made %d writes, want 0", n)
	}
	hb.Name = "renamed"
	clock = t0.Add(20 * time.Second)
	if err := sink.NodeSeen(ctx, hb); err != nil {
		t.Fatal(err)
	}
	if got := nodeRow(t, s, host); got.Name != "renamed" || len(got.Addrs) != 1 {
		t.Fatalf("after a rename the row is %+v; want the name renamed, its addresses kept", got)
	}
	if n := w.n.Load(); n == 0 {
		t.Error("a renamed node's heartbeat wrote nothing")
	}
}

// testSharedNodeNames: a name two nodes use is shared; one node's name,
// a name nobody uses and "" are not.
func testSharedNodeNames(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	for _, n := range []store.Node{
		{PeerID: newPublisher(t).peer, Name: "twin", LastHeartbeat: at, Status: store.StatusOnline},
		{PeerID: newPublisher(t).peer, Name: "twin", LastHeartbeat: at, Status: store.StatusOffline},
		{PeerID: newPublisher(t).peer, Name: "solo", LastHeartbeat: at, Status: store.StatusOnline},
		{PeerID: newPublisher(t).peer, LastHeartbeat: at, Status: store.StatusOnline},
		{PeerID: newPublisher(t).peer, LastHeartbeat: at, Status: store.StatusOnline},
	} {
		if err := s.UpsertNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.SharedNodeNames(ctx, []string{"twin", "solo", "nobody", ""})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got["twin"] {
		t.Errorf("SharedNodeNames = %v, want only twin", got)
	}
	if got, err := s.SharedNodeNames(ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("SharedNodeNames(none) = %v, %v", got, err)
	}
}
