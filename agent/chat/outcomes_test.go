package chat_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestOutcomesChangeHealth: each turn of a local agent tells the health
// tracker how it went, so failing turns make the agent failing and good
// ones bring it back; turns that say nothing of the backend are not
// counted.
func TestOutcomesChangeHealth(t *testing.T) {
	n := newNode(t, sqlitetest.Open(t))
	h := registry.NewHealth(registry.HealthOptions{Recent: 5 * time.Minute, Now: n.Clock.Now})
	n.Chat.Outcomes = h
	id := n.register(t, "", "flaky").Record.ID
	far := n.Remote(t, registrytest.Input("far")).Record.ID

	n.turn(t, chat.OperatorOwner, chat.Request{AgentID: id, Text: "hi"})
	if got := h.Summary(id); got.State != agent.HealthHealthy || got.SuccessRate != 1 {
		t.Fatalf("after a good turn: %+v", got)
	}
	n.local.fn = func(context.Context, func(string) error) (string, error) {
		return "", &runtime.BackendError{Kind: agent.ErrBackendUnavailable, Backend: agent.BackendWebhook, Public: "HTTP 503"}
	}
	for range 2 {
		n.Chat.Turn(t.Context(), chat.OperatorOwner, chat.Request{AgentID: id, Text: "hi"}, discard)
	}
	if got := h.Summary(id); got.State != agent.HealthFailing || got.SuccessRate != 0.333 {
		t.Fatalf("after 2 of 3 turns failed: %+v, want failing", got)
	}

	// Not the backend's fault: the caller went away, its emit failed, the
	// node itself failed. None is counted.
	ctx, cancel := context.WithCancel(t.Context())
	n.local.fn = func(context.Context, func(string) error) (string, error) {
		cancel()
		return "", fmt.Errorf("webhook backend: %w", context.Canceled)
	}
	n.Chat.Turn(ctx, chat.OperatorOwner, chat.Request{AgentID: id, Text: "hi"}, discard)
	n.local.fn = nil // streams "Hel", "lo" through emit
	n.Chat.Turn(t.Context(), chat.OperatorOwner, chat.Request{AgentID: id, Text: "hi"}, func(string) error { return errors.New("socket closed") })
	n.local.fn = func(context.Context, func(string) error) (string, error) {
		return "", errors.New("look up backend: disk on fire")
	}
	n.Chat.Turn(t.Context(), chat.OperatorOwner, chat.Request{AgentID: id, Text: "hi"}, discard)
	n.remote.fn = func(context.Context, func(string) error) (string, error) { return "", agent.ErrBackendUnavailable }
	n.Chat.Turn(t.Context(), chat.OperatorOwner, chat.Request{AgentID: far, Text: "hi"}, discard) // its host counts it
	if got := h.Summaries(); len(got) != 1 || got[id].SuccessRate != 0.333 {
		t.Fatalf("summaries %+v, want only the three counted turns of %s", got, id)
	}

	// Turns an agent delegates to a local agent count too.
	n.local.fn = nil
	clock := n.Clock
	clock.Add(6 * time.Minute)
	if _, err := n.Chat.AskAgent(t.Context(), agent.NewTrace(), id, "hi"); err != nil {
		t.Fatal(err)
	}
	if got := h.Summary(id); got.State != agent.HealthHealthy || got.SuccessRate != 0.5 {
		t.Fatalf("after a good delegated turn, the failures no longer recent: %+v", got)
	}
}
