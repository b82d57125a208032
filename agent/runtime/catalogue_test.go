package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
)

// A catalogue listing (a server its users run themselves) is never
// answered, and says why; its probe does not pass.
func TestCatalogueListingIsNotChattable(t *testing.T) {
	b := agent.Backend{Kind: agent.BackendCatalogue}
	if err := b.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil }, runtime.RuntimeOptions{})
	defer rt.Close()
	_, err := rt.Answer(t.Context(), agent.Turn{AgentID: "x", Text: "hello"}, nil)
	if !errors.Is(err, agent.ErrUnknownAgent) || !strings.Contains(err.Error(), "not hosted") {
		t.Errorf("Answer = %v, want a not-hosted refusal", err)
	}
	if res := rt.Probe(t.Context(), b); res.OK {
		t.Error("a catalogue listing's probe passed")
	}
}
