package peermcp

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// spender is an agent that asks as many other agents as its message says
// during its turn, as a delegating agent would, within the trace it came
// with; its reply has an x for each ask that ran.
type spender struct{}

func (spender) Answer(_ context.Context, t agent.Turn, _ func(string) error) (string, error) {
	ran, asks := 0, 0
	_, _ = fmt.Sscan(t.Text, &asks)
	for i := range asks {
		if _, err := t.Trace.Pass(t.AgentID, strings.Repeat(string(rune('a'+i)), agent.IDLen)); err == nil {
			ran++
		}
	}
	return strings.Repeat("x", ran), nil
}

// A host spends no more of the tree than the caller handed it (the
// default budget from a caller that predates budgets) and answers with
// what is left, in the result's _meta.
func TestHandlerKeepsToTheHandedBudget(t *testing.T) {
	h := newTestHost(t)
	h.cfg.Answerer = spender{}
	ts := httptest.NewServer(NewHandler(h.cfg))
	t.Cleanup(ts.Close)
	s := connect(t, ts.URL)

	for _, tc := range []struct {
		name      string
		trace     map[string]any
		asks      int
		ran, left int
	}{
		{"from an old node, no budget", map[string]any{"id": "old"}, 20, agent.TreeTurns, 0},
		{"handed 3", map[string]any{"id": "t3", "budget": 3}, 20, 3, 0},
		{"handed 5, 2 spent", map[string]any{"id": "t5", "budget": 5}, 2, 2, 3},
		{"handed 0", map[string]any{"id": "t0", "budget": 0}, 20, 0, 0},
		{"asking for more than a tree has", map[string]any{"id": "big", "budget": 1 << 20}, 20, agent.TreeTurns, 0},
	} {
		var req mcp.CallToolRequest
		req.Params.Name = ToolName
		req.Params.Arguments = map[string]any{"agent_id": h.echo, "text": fmt.Sprint(tc.asks)}
		req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{agent.TraceMetaKey: tc.trace}}
		res, err := s.c.CallTool(t.Context(), req)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tc.name, err, res)
		}
		if ran := len(resultText(res)); ran != tc.ran {
			t.Errorf("%s: the agent ran %d asks, want %d", tc.name, ran, tc.ran)
		}
		back, ok := returnedTrace(res)
		if !ok || back.ID != tc.trace["id"] || back.Budget() != tc.left {
			t.Errorf("%s: answered with trace %+v (ok %v, budget %d), want its id and %d left", tc.name, back, ok, back.Budget(), tc.left)
		}
	}
}
