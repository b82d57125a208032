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
	mu     sync.Mutex
	caller string
}

func (q *queuedAnswerer) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	q.mu.Lock()
	q.caller = agent.CallerOf(ctx)
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
// on the host it waits as the calling node.
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
		OnWait: func(n int) { mu.Lock(); heard = append(heard, n); mu.Unlock() }}, func(string) error { return nil })
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
}
