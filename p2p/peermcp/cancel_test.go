package peermcp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// blockingAnswerer streams one chunk, then waits for its context to end
// and reports that it did.
type blockingAnswerer struct {
	streamed chan struct{}
	ended    chan error
}

func (b blockingAnswerer) Answer(ctx context.Context, _ agent.Turn, emit func(string) error) (string, error) {
	if err := emit("first "); err != nil {
		return "", err
	}
	close(b.streamed)
	<-ctx.Done()
	b.ended <- ctx.Err()
	return "first ", ctx.Err()
}

// TestSendCancelReachesHost: when the caller of a remote turn cancels it
// (AgentChat's Stop), the hosting node's backend sees its context end:
// the turn does not run on at the host until its own timeout.
// Both ways: over HTTP, and in the lines protocol.
func TestSendCancelReachesHost(t *testing.T) {
	for _, lines := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "lines"}[lines], func(t *testing.T) { testSendCancelReachesHost(t, lines) })
	}
}

func testSendCancelReachesHost(t *testing.T, lines bool) {
	h := newTestHost(t)
	b := blockingAnswerer{streamed: make(chan struct{}), ended: make(chan error, 1)}
	h.cfg.Answerer = b
	host := mcpTestNode(t)
	if lines {
		host.ServeMCPLines(NewLinesHandler(h.cfg).ServeStream)
	} else if err := host.ServeMCP(NewHandler(h.cfg)); err != nil {
		t.Fatal(err)
	}
	portal := mcpTestNode(t)
	mcpIntroduce(portal, host)
	client := testClient(t, portal)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan string, 4)
	sent := make(chan error, 1)
	go func() {
		_, err := client.Send(ctx, host.PeerID(), agent.Turn{AgentID: h.echo, Text: "hello"}, func(c string) error {
			got <- c
			return nil
		})
		sent <- err
	}()
	select {
	case c := <-got:
		if c != "first " {
			t.Errorf("first chunk %q", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no chunk from the host")
	}
	<-b.streamed
	cancel()
	select {
	case err := <-sent:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Send after cancel: %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Send did not return after its context was canceled")
	}
	select {
	case err := <-b.ended:
		if err == nil {
			t.Error("the host's backend context ended without an error")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the host's backend context did not end after the caller canceled")
	}
}
