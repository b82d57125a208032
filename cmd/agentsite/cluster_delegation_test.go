package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// Agents that call agents across three nodes, each model a fakellm script
// that streams tool_calls: the planner on A delegates to B and C, and the
// limits (loops, A→B→A, 9 calls, a host dying mid-ask) end as tool errors
// the model reads, never as a failed or hung turn.
func TestDelegationAcrossThreeNodes(t *testing.T) {
	p := startDelegationPlanet(t)

	t.Run("calculator on B, haiku on C", func(t *testing.T) {
		out := p.mustAsk(t, askHaiku)
		asks := askSteps(out)
		if len(asks) != 2 {
			t.Fatalf("ask_agent steps = %+v, want 2", out.Steps)
		}
		calc, poem := asks[0], asks[1]
		if calc.AgentID != p.calc.ID || calc.AgentName != "Calculator" || calc.Host != demoHostName(p.b.peerID()) || calc.Text != "6*7" || calc.Reply != "42" {
			t.Errorf("first step = %+v, want B's calculator (%s on %s) → 42", calc, p.calc.ID, demoHostName(p.b.peerID()))
		}
		if poem.AgentID != p.haiku.ID || poem.Host != demoHostName(p.c.peerID()) || !strings.Contains(poem.Reply, "42") {
			t.Errorf("second step = %+v, want C's haiku (%s on %s)", poem, p.haiku.ID, demoHostName(p.c.peerID()))
		}
		if !strings.Contains(out.Reply, "6*7 = 42") || !strings.Contains(out.Reply, poem.Reply) {
			t.Errorf("the answer does not use both replies:\n%s", out.Reply)
		}
		if out.Steps[0].Tool != runtime.ToolFindAgents || out.Steps[0].Text != "calculator" {
			t.Errorf("the planner did not search first: %+v", out.Steps)
		}
		if stored := p.storedSteps(t, out.ConversationID); !slices.Equal(stored, out.Steps) {
			t.Errorf("stored steps = %+v\nwant the API's %+v", stored, out.Steps)
		}
	})

	// The planner is A's; asked through B's portal, its steps travel back
	// from A (MCP step notifications) and B shows and keeps them.
	t.Run("steps of a remote planner reach the asking portal", func(t *testing.T) {
		waitfor.Until(t, 15*time.Second, "B to list A's planner", func() bool {
			code, _ := p.b.agent(p.planner.ID)
			return code == http.StatusOK
		})
		out, err := sendMessage(t.Context(), p.b.m.HTTPURL(), p.planner.ID, askHaiku)
		if err != nil {
			t.Fatal(err)
		}
		if asks := askSteps(out); len(asks) != 2 || asks[0].Reply != "42" {
			t.Fatalf("B's answer has steps %+v, want the planner's two asks", out.Steps)
		}
		msgs, err := p.b.m.Store.ListMessages(t.Context(), out.ConversationID, 100)
		if err != nil {
			t.Fatal(err)
		}
		stored := 0
		for _, m := range msgs {
			if m.Role == agent.RoleStep {
				stored++
			}
		}
		if stored != len(out.Steps) {
			t.Errorf("B stored %d steps, the answer has %d", stored, len(out.Steps))
		}
	})

	t.Run("asking itself is a loop", func(t *testing.T) {
		out := p.mustAsk(t, askSelf)
		if asks := askSteps(out); len(asks) != 1 || asks[0].AgentID != p.planner.ID || asks[0].Error == "" || asks[0].Reply != "" {
			t.Errorf("steps = %+v, want one failed ask of the planner itself", out.Steps)
		}
		if codes := toolCodes(p.plannerModel, askSelf); len(codes) != 1 || codes[0] != string(agent.CodeDelegationLoop) {
			t.Errorf("the model read tool results with codes %q, want [delegation_loop]", codes)
		}
		if !strings.Contains(out.Reply, "what I heard:") {
			t.Errorf("the turn did not end with the model's answer: %q", out.Reply)
		}
	})

	t.Run("A to B to A is a loop", func(t *testing.T) {
		out := p.mustAsk(t, askBounce)
		asks := askSteps(out)
		if len(asks) != 1 || asks[0].AgentID != p.relay.ID || asks[0].Error != "" {
			t.Fatalf("steps = %+v, want one answered ask of B's relay", out.Steps)
		}
		// B's runtime refused the ask back to A: the trace that came with
		// the message (MCP _meta) already named the planner.
		if codes := toolCodes(p.relayModel, "ask the planner back"); len(codes) != 1 || codes[0] != string(agent.CodeDelegationLoop) {
			t.Errorf("B's relay model read tool results with codes %q, want [delegation_loop]", codes)
		}
		if r := lastRequest(p.plannerModel, relayAsks); len(r.Messages) > 0 {
			t.Errorf("the relay's ask reached the planner (its model was asked %q)", r.LastUser())
		}
		if !strings.Contains(asks[0].Reply, "delegation_loop") || !strings.Contains(out.Reply, "what I heard:") {
			t.Errorf("the relay's answer %q / the planner's %q do not carry the refusal", asks[0].Reply, out.Reply)
		}
	})

	t.Run("nine tool calls are cut at eight", func(t *testing.T) {
		echoes := map[string]bool{}
		for i := range 4 {
			name := fmt.Sprintf("echo%d", i)
			a := p.b.register(name)
			p.ids.set(name, a.ID)
			echoes[a.ID] = true
		}
		waitfor.Until(t, 30*time.Second, "A to list B's echo agents online", func() bool {
			onA := p.a.agentIDs("online")
			for id := range echoes {
				if _, ok := onA[id]; !ok {
					return false
				}
			}
			return true
		})
		out := p.mustAsk(t, askNine)
		if asks := askSteps(out); len(asks) != agent.MaxDelegations {
			t.Errorf("%d ask_agent steps, want %d: %+v", len(asks), agent.MaxDelegations, out.Steps)
		}
		for _, s := range out.Steps {
			if !echoes[s.AgentID] || s.Error != "" || s.Reply == "" {
				t.Errorf("step %+v, want an answer of one of B's echo agents", s)
			}
		}
		last := lastRequest(p.plannerModel, askNine)
		results := last.ToolResults()
		if len(results) != 9 || last.ToolChoice != "none" {
			t.Fatalf("the model's last request has %d tool results and tool_choice %q, want 9 and none", len(results), last.ToolChoice)
		}
		for i, r := range results[:8] {
			if reply, errText := toolReply(r); errText != "" || reply == "" {
				t.Errorf("tool result %d = %s, want an echo agent's reply", i, r)
			}
		}
		if code := toolCode(results[8]); code != string(agent.CodeDelegationBudget) {
			t.Errorf("ninth tool result = %s, want code delegation_budget", results[8])
		}
		if !strings.Contains(out.Reply, "9 tool results") {
			t.Errorf("answer %q", out.Reply)
		}
	})

	// Last: it stops node C.
	t.Run("a host dying mid-ask", func(t *testing.T) {
		type answer struct {
			out apiwire.MessageOut
			err error
		}
		done := make(chan answer, 1)
		go func() {
			out, err := p.askPlanner(t.Context(), askPoet)
			done <- answer{out, err}
		}()
		select {
		case <-p.poetAsked:
		case <-time.After(60 * time.Second):
			t.Fatal("the planner's ask never reached C's poet")
		}
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			p.c.stop()
		}()
		var got answer
		select {
		case got = <-done:
		case <-time.After(90 * time.Second):
			t.Fatal("the planner's turn did not end after C stopped")
		}
		select {
		case <-stopped:
		case <-time.After(60 * time.Second):
			t.Fatal("C did not stop")
		}
		if got.err != nil {
			t.Fatalf("the turn failed: %v", got.err)
		}
		asks := askSteps(got.out)
		if len(asks) != 1 || asks[0].AgentID != p.poet.ID || asks[0].Reply != "" || asks[0].Error == "" {
			t.Fatalf("steps = %+v, want one failed ask of C's poet", got.out.Steps)
		}
		codes := toolCodes(p.plannerModel, askPoet)
		if len(codes) != 1 || (codes[0] != string(agent.CodeHostUnreachable) && codes[0] != string(agent.CodeAgentTimeout)) {
			t.Errorf("the model read codes %q, want host_unreachable or agent_timeout; step error %q", codes, asks[0].Error)
		}
		if !strings.Contains(got.out.Reply, "what I heard:") {
			t.Errorf("the turn did not end with the model's answer: %q", got.out.Reply)
		}
		t.Logf("step error: %q, model read: %v", asks[0].Error, p.plannerModel.Requests()[len(p.plannerModel.Requests())-1].ToolResults())
	})
}

// mustAsk sends text to the planner and fails the test on an error.
func (p *delegationPlanet) mustAsk(t *testing.T, text string) apiwire.MessageOut {
	t.Helper()
	out, err := p.askPlanner(t.Context(), text)
	if err != nil {
		t.Fatalf("ask %q: %v", text, err)
	}
	return out
}

// storedSteps are the steps A stored in the conversation.
func (p *delegationPlanet) storedSteps(t *testing.T, convID string) []agent.Step {
	t.Helper()
	msgs, err := p.a.m.Store.ListMessages(t.Context(), convID, 100)
	if err != nil {
		t.Fatal(err)
	}
	var steps []agent.Step
	for _, m := range msgs {
		if m.Role != agent.RoleStep {
			continue
		}
		var s agent.Step
		if err := json.Unmarshal([]byte(m.Text), &s); err != nil {
			t.Fatalf("stored step %q: %v", m.Text, err)
		}
		steps = append(steps, s)
	}
	return steps
}

// askSteps are the ask_agent steps of an answer.
func askSteps(out apiwire.MessageOut) []agent.Step {
	var asks []agent.Step
	for _, s := range out.Steps {
		if s.Tool == runtime.ToolAskAgent {
			asks = append(asks, s)
		}
	}
	return asks
}

// lastRequest is the last request model got in the turn that began with
// the user message text.
func lastRequest(model *fakellm.Server, text string) fakellm.Request {
	var last fakellm.Request
	for _, r := range model.Requests() {
		if r.LastUser() == text {
			last = r
		}
	}
	return last
}

// toolCodes are the error codes of the tool results model read in that
// turn ("" for a result that is not an error).
func toolCodes(model *fakellm.Server, text string) []string {
	var codes []string
	for _, r := range lastRequest(model, text).ToolResults() {
		codes = append(codes, toolCode(r))
	}
	return codes
}

func toolCode(result string) string {
	var r struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal([]byte(result), &r)
	return r.Code
}
