package peermcp

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// queuedAnswerer waits in a pretend model queue before it answers, and
// keeps the caller it waited as.
type queuedAnswerer struct {
	mu       sync.Mutex
	caller   string
	fromPeer string
	approval *agent.ApprovalAnswer
}

func (q *queuedAnswerer) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	q.mu.Lock()
	q.caller, q.fromPeer, q.approval = agent.CallerOf(ctx), t.FromPeer, t.Approval
	q.mu.Unlock()
	if t.OnWait != nil {
		for _, n := range []int{3, 1, -1} {
			t.OnWait(n)
		}
	}
	return "done", emit("done")
}

// TestSendCarriesTheModelQueue: a remote turn waiting for its model on the
// host tells the calling node its place, so the asking page can show it;
// on the host it waits as the calling node, and is marked as a peer's.
func TestSendCarriesTheModelQueue(t *testing.T) {
	h := newTestHost(t)
	q := &queuedAnswerer{}
	h.cfg.Answerer = q
	host := mcpTestNode(t)
	if err := host.ServeMCP(NewHandler(h.cfg)); err != nil {
		t.Fatal(err)
	}
	portal := mcpTestNode(t)
	mcpIntroduce(portal, host)
	client := testClient(t, portal)

	var mu sync.Mutex
	var heard []int
	reply, err := client.Send(t.Context(), host.PeerID(), agent.Turn{AgentID: h.echo, Text: "hello",
		Approval: &agent.ApprovalAnswer{ID: "ap1", Approve: true},
		OnWait:   func(n int) { mu.Lock(); heard = append(heard, n); mu.Unlock() }}, func(string) error { return nil })
	if err != nil || reply != "done" {
		t.Fatalf("Send: %q, %v", reply, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(heard, []int{3, 1, -1}) {
		t.Errorf("the calling node heard %v, want [3 1 -1]", heard)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if want := "peer:" + portal.PeerID(); q.caller != want {
		t.Errorf("the host's turn waited as %q, want %q", q.caller, want)
	}
	// The host knows the turn came from a peer, where no one can approve
	// a tool call, and no approval crosses with it.
	if want := "peer:" + portal.PeerID(); q.fromPeer != want || q.approval != nil {
		t.Errorf("the host's turn: from peer %q (want %q), approval %+v (want none)", q.fromPeer, want, q.approval)
	}
}
