package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// checkDemoPlanner asks the running demo's planner (node-a, portal base)
// one question through node-a's API: the answer comes from node-b's
// calculator and node-c's haiku agent, each asked in a step.
func checkDemoPlanner(t *testing.T, base int) {
	t.Helper()
	portal := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", base+i) }
	local := func(i int, name string) apiwire.Agent {
		for _, a := range demoTestAgents(portal(i)) {
			if a.Local && a.Name == name {
				return a
			}
		}
		return apiwire.Agent{}
	}
	planner := local(0, "planner")
	if planner.ID == "" {
		var names []string
		for _, a := range demoTestAgents(portal(0)) {
			names = append(names, a.Name)
		}
		t.Fatalf("node-a does not host the planner; it lists %q", names)
	}
	if !strings.Contains(planner.Description, "scripted demo model, not a real LLM") {
		t.Errorf("the planner does not say it runs on a scripted demo model: %q", planner.Description)
	}
	calc, haiku := local(1, "calculator"), local(2, "haiku")
	if calc.ID == "" || haiku.ID == "" {
		t.Fatalf("node-b's calculator %q, node-c's haiku %q", calc.ID, haiku.ID)
	}
	waitfor.Until(t, 30*time.Second, "node-a to list node-b's calculator and node-c's haiku online", func() bool {
		online := 0
		for _, a := range demoTestAgents(portal(0)) {
			if (a.ID == calc.ID || a.ID == haiku.ID) && a.Status == "online" {
				online++
			}
		}
		return online == 2
	})

	out, err := sendMessage(t.Context(), portal(0), planner.ID, "what is 12*(3+4)?")
	if err != nil {
		t.Fatalf("ask the planner: %v", err)
	}
	var asks []agent.Step
	for _, s := range out.Steps {
		if s.Tool == runtime.ToolAskAgent {
			asks = append(asks, s)
		}
	}
	if len(asks) != 2 || asks[0].AgentID != calc.ID || asks[0].Reply != "84" || asks[1].AgentID != haiku.ID || asks[1].Reply == "" {
		t.Fatalf("ask_agent steps = %+v, want node-b's calculator (%s) → 84, then node-c's haiku (%s)", asks, calc.ID, haiku.ID)
	}
	if !strings.Contains(out.Reply, "12*(3+4) = 84") || !strings.Contains(out.Reply, asks[1].Reply) || !strings.Contains(out.Reply, "node-b") {
		t.Errorf("the answer does not use both replies:\n%s\nsteps: %+v", out.Reply, out.Steps)
	}
	t.Logf("the planner's answer:\n%s\nits steps: %+v", out.Reply, out.Steps)

	// The demo notebook: saving a note waits for approval, then runs.
	out, err = sendMessage(t.Context(), portal(0), planner.ID, "note buy milk")
	if err != nil || out.Approval == nil || out.Approval.Tool != "save_note" {
		t.Fatalf("note: %+v, %v; want a save_note waiting for approval", out, err)
	}
	out, err = postMessage(t.Context(), portal(0), planner.ID, apiwire.MessageIn{ConversationID: out.ConversationID,
		Approval: &agent.ApprovalAnswer{ID: out.Approval.ID, Approve: true}})
	if err != nil || out.Reply != "done: saved: buy milk" {
		t.Errorf("after approval: %+v, %v", out, err)
	}
}

func TestDemoPlannerExpression(t *testing.T) {
	for in, want := range map[string]string{
		"what is 12*(3+4)?":             "12*(3+4)",
		"what is 6*7, as a haiku?":      "6*7",
		"2.5 / 5.":                      "2.5 / 5",
		"how old is a cat born in 2019": demoDefaultSum,
		"tell me something":             demoDefaultSum,
		"the 3 bears and 2 ^ 10 apples": "2 ^ 10",
	} {
		if got := demoExpression(in); got != want {
			t.Errorf("demoExpression(%q) = %q, want %q", in, got, want)
		}
	}
}

// The planner's script answers with what it has when a step fails, and
// never asks a calculator on its own node.
func TestDemoPlannerScript(t *testing.T) {
	p := demoPlanner{HaikuID: "haiku-id", HaikuWhere: "node-c", Hosts: map[string]string{"node bbbbbb": "node-b"}}
	req := func(results ...string) fakellm.Request {
		r := fakellm.Request{Messages: []fakellm.Message{{Role: "user", Content: "what is 1+1?"}}}
		for _, res := range results {
			r.Messages = append(r.Messages, fakellm.Message{Role: "tool", Content: res})
		}
		return r
	}
	found := `{"agents":[{"agent_id":"mine","name":"Calculator","host":"this node"},{"agent_id":"b-calc","name":"Calculator","host":"node bbbbbb"}]}`
	if r := p.Reply(req()); len(r.Calls) != 1 || r.Calls[0].Function.Name != runtime.ToolFindAgents {
		t.Errorf("first reply = %+v, want find_agents", r)
	}
	if r := p.Reply(req(found)); len(r.Calls) != 1 || !strings.Contains(r.Calls[0].Function.Arguments, `"b-calc"`) ||
		!strings.Contains(r.Calls[0].Function.Arguments, `"1+1"`) {
		t.Errorf("second reply = %+v, want ask_agent(b-calc, 1+1)", r)
	}
	if r := p.Reply(req(`{"agents":[{"agent_id":"mine","name":"Calculator","host":"this node"}]}`)); len(r.Calls) != 0 || !strings.Contains(r.Text, "found none") {
		t.Errorf("with only a local calculator: %+v", r)
	}
	if r := p.Reply(req(found, `{"error":"The node hosting this agent could not be reached.","code":"host_unreachable"}`)); len(r.Calls) != 0 ||
		!strings.Contains(r.Text, "could not be reached") || !strings.Contains(r.Text, "node-b") {
		t.Errorf("after a failed ask: %+v", r)
	}
	if r := p.Reply(req(found, `{"reply":"2"}`)); len(r.Calls) != 1 || !strings.Contains(r.Calls[0].Function.Arguments, `"haiku-id"`) {
		t.Errorf("third reply = %+v, want ask_agent(haiku-id, 2)", r)
	}
	r := p.Reply(req(found, `{"reply":"2"}`, `{"reply":"two in the dusk"}`))
	if len(r.Calls) != 0 || !strings.Contains(r.Text, "1+1 = 2") || !strings.Contains(r.Text, "two in the dusk") || !strings.Contains(r.Text, "not a real LLM") {
		t.Errorf("answer = %+v", r)
	}
}
