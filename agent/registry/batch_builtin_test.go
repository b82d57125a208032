package registry_test

import (
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// An import never replaces a builtin (the demo agents are builtins): an
// item named as one is refused with the reason, and the builtin stays
// (before, a card named echo "updated" the builtin echo, which came back
// at the next start).
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

// Only the operator's registrations carry an upstream origin (an export
// names the listing by it).
func TestOriginIsTheOperators(t *testing.T) {
	env := registrytest.New(t, sqlitetest.Open(t))
	in := registrytest.Input("weather")
	in.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.someone/weather"}
	if _, err := env.Registry.Create(t.Context(), registry.Actor{Owner: "mallory"}, in); err == nil {
		t.Fatal("an account's registration took an upstream origin")
	} else {
		wantField(t, err, "origin", "operator")
	}
	l, err := env.Registry.Create(t.Context(), registry.Operator, in)
	if err != nil {
		t.Fatal(err)
	}
	// The origin travels in the signed envelope.
	rec, err := agent.OpenIgnoringExpiry(l.Envelope, time.Now())
	if err != nil || rec.Origin == nil || rec.Origin.Name != "io.github.someone/weather" {
		t.Fatalf("operator: %+v, %v", rec, err)
	}
}

// A catalogue listing registers (nothing hosted: no URL, no probe).
func TestCatalogueListingRegisters(t *testing.T) {
	env := registrytest.New(t, sqlitetest.Open(t))
	in := registrytest.Input("files")
	in.Backend = agent.Backend{Kind: agent.BackendCatalogue}
	in.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.a/files", Install: "npx -y @a/files-mcp"}
	if _, err := env.Registry.Create(t.Context(), registry.Operator, in); err != nil {
		t.Fatal(err)
	}
}
