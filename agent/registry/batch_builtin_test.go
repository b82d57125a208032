package registry_test

import (
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
)

// An import never replaces a builtin (the demo agents are builtins): an
// item named as one is refused with the reason, and the builtin stays
// (issue 22: a card named echo "updated" the builtin echo, which came
// back at the next start).
func TestBatchKeepsBuiltins(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		echo := registrytest.Input("echo")
		echo.Backend = agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}
		before := mustCreate(t, env, registry.Operator, echo)

		imported := registrytest.Input("echo")
		imported.Description = "An imported card named echo."
		imported.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "https://example.com/hook"}
		var got []registry.BatchResult
		if err := env.Registry.Batch(t.Context(), registry.Operator, slices.Values([]registry.BatchItem{{Input: imported}}), 1,
			func(r registry.BatchResult) { got = append(got, r) }); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Outcome != registry.OutcomeRefused {
			t.Fatalf("results = %+v, want one refusal", got)
		}
		wantField(t, got[0].Err, "name", "builtin")
		l, err := st.GetAgent(t.Context(), before.Record.ID)
		if err != nil || l.Record.Seq != before.Record.Seq || l.Record.Description != before.Record.Description {
			t.Errorf("the builtin changed: %+v, %v", l.Record, err)
		}
		b, err := st.GetBackend(t.Context(), before.Record.ID)
		if err != nil || b.Kind != agent.BackendBuiltin {
			t.Errorf("backend = %+v, %v", b, err)
		}
	})
}
