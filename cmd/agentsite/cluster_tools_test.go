package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestClusterLLMTools: an llm agent on node A whose tool servers are node
// B's own MCP endpoint and B's calculator (an agent id) searches B's
// catalogue with B's search_agents, asks the calculator over the network,
// and answers from both; each call is a step of the API reply. B's
// search_agents is read-only and runs at once; the owner allows the
// calculator, an agent, to be asked without approval.
func TestClusterLLMTools(t *testing.T) {
	private := []string{"--allow-private-endpoints"}
	a := startClusterNode(t, nodeOpts{extra: private})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}, demo: true, extra: private})
	var calc apiAgent
	waitfor.Until(t, 20*time.Second, "B to host the calculator", func() bool {
		for _, ag := range b.agentIDs("online") {
			if ag.Local && ag.Name == "calculator" {
				calc = ag
				return true
			}
		}
		return false
	})
	waitfor.Until(t, 30*time.Second, "A to list B's calculator online", func() bool {
		_, ok := a.agentIDs("online")[calc.ID]
		return ok
	})

	model := &fakellm.Server{Model: "tools-model", Script: func(req fakellm.Request) fakellm.Reply {
		names := map[string]string{}
		for _, raw := range req.Tools {
			var tool struct{ Function struct{ Name string } }
			_ = json.Unmarshal(raw, &tool)
			n := tool.Function.Name
			names[n[strings.LastIndex(n, "__")+2:]] = n
		}
		switch res := req.ToolResults(); len(res) {
		case 0:
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("s1", names["search_agents"], map[string]string{"query": "calculator"})}}
		case 1:
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("m1", names["send_message"], map[string]string{"text": "6*7"})}}
		default:
			return fakellm.Reply{Text: "found: " + res[0] + " | answered: " + res[1]}
		}
	}}
	tooler := a.registerBackend("tooler", map[string]any{"kind": "llm", "url": serveModel(t, model), "model": "tools-model",
		"tools": []map[string]any{{"url": b.m.HTTPURL() + "/mcp"}, {"agent": calc.ID, "allow": []string{"send_message"}}}})

	out, err := sendMessage(t.Context(), a.m.HTTPURL(), tooler.ID, "what is 6*7?")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Reply, calc.ID) || !strings.Contains(out.Reply, "42") {
		t.Errorf("reply %.500q", out.Reply)
	}
	if len(out.Steps) != 2 {
		t.Fatalf("steps %+v", out.Steps)
	}
	search, ask := out.Steps[0], out.Steps[1]
	if search.Tool != runtime.StepToolCall || search.Name != "search_agents" || !strings.HasSuffix(search.Server, "/mcp") || search.Error != "" || search.Text != `{"query":"calculator"}` {
		t.Errorf("search step %+v", search)
	}
	if ask.Tool != runtime.ToolAskAgent || ask.AgentID != calc.ID || ask.Reply != "42" || ask.Error != "" {
		t.Errorf("ask step %+v", ask)
	}
	if code, body := a.api(http.MethodGet, "/api/v1/agents/"+tooler.ID, nil); code != http.StatusOK {
		t.Errorf("GET tooler: %d %s", code, body)
	}
}
