package mcpserver_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
)

// localReads counts how the agent tools read the local agents.
type localReads struct {
	store.Store
	listLocal, counts, pages atomic.Int64
}

func (l *localReads) ListLocal(ctx context.Context) ([]store.Listing, error) {
	l.listLocal.Add(1)
	return l.Store.ListLocal(ctx)
}

func (l *localReads) CountLocal(ctx context.Context) (store.LocalCount, error) {
	l.counts.Add(1)
	return l.Store.CountLocal(ctx)
}

func (l *localReads) LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	l.pages.Add(1)
	return l.Store.LocalRefs(ctx, q)
}

// TestMCPAgentToolsCountFirst: the agent tools are kept in step with the
// local agents by a count each time, and the ids and names are read (a
// page at a time) only when the set changed; never every listing in full.
// Before, each sync (once a second under use) read every local listing.
func TestMCPAgentToolsCountFirst(t *testing.T) {
	st := &localReads{Store: OpenSQLite(t)}
	env := NewConfig(t, st, nil)
	UseRuntime(env)
	registerAgent(env, "echo-bot", "Echoes.", "echo")
	cs, _ := ConnectMCP(t, env.TS.URL+"/mcp", "")
	listTools := func() map[string]bool {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, tool := range res.Tools {
			out[tool.Name] = true
		}
		return out
	}
	if !listTools()["agent_echo-bot"] {
		t.Fatal("no tool for the local agent")
	}
	pages, counts := st.pages.Load(), st.counts.Load()
	if pages == 0 || counts == 0 {
		t.Fatalf("%d pages, %d counts after the first tools/list", pages, counts)
	}
	// The next syncs (at most one a second) find the same set: a count each.
	waitfor.Until(t, 5*time.Second, "two more syncs", func() bool { listTools(); return st.counts.Load() >= counts+2 })
	if st.pages.Load() != pages || st.listLocal.Load() != 0 {
		t.Fatalf("unchanged local agents read %d more pages and %d full lists", st.pages.Load()-pages, st.listLocal.Load())
	}
	registerAgent(env, "calc-bot", "Arithmetic.", "calculator")
	waitfor.Until(t, 5*time.Second, "a tool for the new agent", func() bool { return listTools()["agent_calc-bot"] })
	if st.pages.Load() <= pages || st.listLocal.Load() != 0 {
		t.Fatalf("a new agent: %d pages (before %d), %d full lists", st.pages.Load(), pages, st.listLocal.Load())
	}
}
