package runtime_test

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
)

// BenchmarkToolRoundTrip is what one tool call adds to a turn: an llm
// agent on a local scripted model answers at once ("direct"), or first
// calls the read-only list_notes of an MCP server on loopback (the
// notebook, mcp-go's Streamable HTTP) and answers from its result
// ("tool": one more model round and one tools/call; the tool list is
// cached after the first turn). Reported: p50 and p99 of a turn, each
// way, and the difference of the p50s (make bench-scheduler).
func BenchmarkToolRoundTrip(b *testing.B) {
	notes := fakenotes.New()
	mcpSrv := httptest.NewServer(notes.Handler())
	defer mcpSrv.Close()
	script := func(req fakellm.Request) fakellm.Reply {
		if len(req.Tools) == 0 || len(req.ToolResults()) > 0 {
			return fakellm.Reply{Text: "done"}
		}
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("l1", named(b, req, fakenotes.ToolList, ""), map[string]string{})}}
	}
	modelSrv := httptest.NewServer(&fakellm.Server{Model: "demo", Script: script})
	defer modelSrv.Close()
	run := func(tools []agent.ToolServer) []time.Duration {
		be := agent.Backend{Kind: agent.BackendLLM, URL: modelSrv.URL + "/v1", Model: "demo", Tools: tools}
		rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return be, nil },
			runtime.RuntimeOptions{AllowPrivate: true, Timeout: time.Minute})
		defer rt.Close()
		const turns = 300
		took := make([]time.Duration, 0, turns)
		for i := range turns + 10 {
			t0 := time.Now()
			if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: idSelf, Text: "list my notes"}, nil); err != nil {
				b.Fatal(err)
			}
			if i >= 10 { // the first turns warm the connections and the tool list
				took = append(took, time.Since(t0))
			}
		}
		slices.Sort(took)
		return took
	}
	for range b.N {
		direct := run(nil)
		tool := run([]agent.ToolServer{{URL: mcpSrv.URL + "/mcp"}})
		pct := func(d []time.Duration, p int) float64 { return float64(d[len(d)*p/100].Microseconds()) / 1000 }
		b.ReportMetric(pct(direct, 50), "direct-p50-ms")
		b.ReportMetric(pct(direct, 99), "direct-p99-ms")
		b.ReportMetric(pct(tool, 50), "tool-p50-ms")
		b.ReportMetric(pct(tool, 99), "tool-p99-ms")
		b.ReportMetric(pct(tool, 50)-pct(direct, 50), "tool-overhead-p50-ms")
	}
}
