package registry_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
)

// TestReplicasShareAStore: two nodes (own keys) on one database, as the
// replicas of a portal. Each re-signs only its own agents, and a change
// through the node that cannot sign an agent is a clear conflict, not a
// broken record or a refresh that stops half-way.
func TestReplicasShareAStore(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		a, b := registrytest.New(t, st), registrytest.New(t, st)
		ctx := t.Context()
		onA := mustCreate(t, a, alice, registrytest.Input("on-a"))
		onB := mustCreate(t, b, alice, registrytest.Input("on-b"))

		in := registrytest.Input("on-a")
		in.Description = "changed through b"
		if _, err := b.Registry.Update(ctx, alice, onA.Record.ID, in); !errors.Is(err, registry.ErrOtherReplica) {
			t.Fatalf("update through the other replica: %v, want ErrOtherReplica", err)
		}
		if err := b.Registry.Delete(ctx, registry.Operator, onA.Record.ID); !errors.Is(err, registry.ErrOtherReplica) {
			t.Fatalf("delete through the other replica: %v", err)
		}
		var res []registry.BatchResult
		if err := b.Registry.Batch(ctx, registry.Operator, slices.Values([]registry.BatchItem{{Input: in}}), 1,
			func(r registry.BatchResult) { res = append(res, r) }); err != nil {
			t.Fatal(err)
		}
		// b's id for the name is its own: a new agent of b, not a change of a's.
		if res[0].Outcome != registry.OutcomeCreated || res[0].ID == onA.Record.ID {
			t.Fatalf("batch on b = %+v", res[0])
		}

		// Refresh on b re-signs b's agents only, and does not fail on a's.
		n, err := b.Registry.Refresh(ctx, 2*registrytest.TTL) // every agent is due

		if err != nil || n != 2 {
			t.Fatalf("refresh on b = %d, %v; want b's 2 agents and no error", n, err)
		}
		if got := mustGet(t, st, onA.Record.ID); got.Record.Seq != onA.Record.Seq || got.Record.Publisher != a.PeerID {
			t.Errorf("a's agent was re-signed by b: %+v", got.Record)
		}
		if got := mustGet(t, st, onB.Record.ID); got.Record.Seq <= onB.Record.Seq {
			t.Errorf("b's agent was not refreshed")
		}
		if n, err := a.Registry.Refresh(ctx, 2*registrytest.TTL); err != nil || n != 1 {
			t.Fatalf("refresh on a = %d, %v", n, err)
		}
	})
}
