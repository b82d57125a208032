package runtime_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// Agent ids of the test planet (valid ids: 52 base32 characters).
var (
	idSelf = strings.Repeat("a", agent.IDLen)
	idCalc = strings.Repeat("b", agent.IDLen)
	idPoet = strings.Repeat("c", agent.IDLen)
)

// fakeDelegator answers find_agents and ask_agent from fixed replies and
// records what it was asked.
type fakeDelegator struct {
	mu     sync.Mutex
	asked  []string      // agent ids, in order
	traces []agent.Trace // the trace each ask carried
	fail   map[string]error
	hold   chan struct{} // if set, asks wait for it (a host that hangs)
}

func (f *fakeDelegator) FindAgents(_ context.Context, query, tag string) ([]runtime.FoundAgent, error) {
	return []runtime.FoundAgent{{ID: idCalc, Name: "Calculator", Host: "node b", Status: "online"}}, nil
}

func (f *fakeDelegator) AskAgent(ctx context.Context, trace agent.Trace, agentID, text string) (string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, agentID)
	f.traces = append(f.traces, trace)
	f.mu.Unlock()
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if err := f.fail[agentID]; err != nil {
		return "", err
	}
	switch agentID {
	case idCalc:
		return "42", nil
	case idPoet:
		return "autumn wind / forty-two leaves fall / quiet sums", nil
	}
	return "", agent.ErrUnknownAgent
}

func (f *fakeDelegator) Describe(_ context.Context, id string) (string, string) {
	return map[string]string{idCalc: "Calculator", idPoet: "Haiku"}[id], "node b"
}

// delegatingTurn runs a turn of a delegate llm agent whose model follows
// script, and returns the reply, the steps heard and the model server.
func delegatingTurn(t *testing.T, script fakellm.Script, d runtime.Delegator, trace agent.Trace) (string, []agent.Step, *fakellm.Server, error) {
	t.Helper()
	model := &fakellm.Server{Model: "demo", Script: script}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo", Delegate: true}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil },
		runtime.RuntimeOptions{AllowPrivate: true, Timeout: 10 * time.Second})
	t.Cleanup(func() { _ = rt.Close() })
	rt.Delegator = d
	var steps []agent.Step
	reply, err := rt.Answer(t.Context(), agent.Turn{AgentID: idSelf, Text: "what is 6*7, as a haiku?", Trace: trace,
		OnStep: func(s agent.Step) { steps = append(steps, s) }}, func(string) error { return nil })
	return reply, steps, model, err
}

// askBoth asks the calculator, then the poet, then answers with both.
func askBoth(req fakellm.Request) fakellm.Reply {
	switch res := req.ToolResults(); len(res) {
	case 0:
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", runtime.ToolAskAgent, map[string]string{"agent_id": idCalc, "text": "6*7"})}}
	case 1:
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c2", runtime.ToolAskAgent, map[string]string{"agent_id": idPoet, "text": "a haiku about 42"})}}
	default:
		return fakellm.Reply{Text: "Both said: " + strings.Join(res, " | ")}
	}
}

func TestDelegationUsesBothReplies(t *testing.T) {
	d := &fakeDelegator{}
	reply, steps, model, err := delegatingTurn(t, askBoth, d, agent.NewTrace())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "42") || !strings.Contains(reply, "autumn wind") {
		t.Errorf("reply %q does not use both delegated replies", reply)
	}
	if len(d.asked) != 2 || d.asked[0] != idCalc || d.asked[1] != idPoet {
		t.Errorf("asked %v", d.asked)
	}
	for _, tr := range d.traces {
		if len(tr.Agents) != 1 || tr.Agents[0] != idSelf {
			t.Errorf("delegated trace %+v, want the caller in it", tr)
		}
	}
	// Steps: started and done for each, with names for people.
	var done []agent.Step
	for _, s := range steps {
		if s.Done {
			done = append(done, s)
		}
	}
	if len(steps) != 4 || len(done) != 2 || done[0].AgentName != "Calculator" || done[0].Reply != "42" || done[1].AgentID != idPoet {
		t.Errorf("steps %+v", steps)
	}
	// The model was offered the tools and got the results back.
	reqs := model.Requests()
	if len(reqs) != 3 || len(reqs[0].Tools) != 2 {
		t.Fatalf("%d requests, tools %d", len(reqs), len(reqs[0].Tools))
	}
	last := reqs[2].Messages
	if n := len(last); n < 4 || last[n-1].Role != "tool" || last[n-1].ToolCallID != "c2" || last[n-2].Role != "assistant" || len(last[n-2].ToolCalls) != 1 {
		t.Errorf("last request's messages %+v", last)
	}
}

func TestDelegationRefusesLoopsAndDepth(t *testing.T) {
	askSelf := func(req fakellm.Request) fakellm.Reply {
		if len(req.ToolResults()) == 0 {
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", runtime.ToolAskAgent, map[string]string{"agent_id": idSelf, "text": "hi me"})}}
		}
		return fakellm.Reply{Text: "tool said " + req.ToolResults()[0]}
	}
	d := &fakeDelegator{}
	reply, steps, _, err := delegatingTurn(t, askSelf, d, agent.NewTrace())
	if err != nil || !strings.Contains(reply, string(agent.CodeDelegationLoop)) || len(d.asked) != 0 {
		t.Errorf("asking itself: reply %q, err %v, asked %v; want a loop refusal the model reads", reply, err, d.asked)
	}
	if len(steps) != 2 || steps[1].Error == "" {
		t.Errorf("the refused step: %+v", steps)
	}
	// A→B→A: B (this turn) was asked by A; asking A again loops.
	askBack := func(req fakellm.Request) fakellm.Reply {
		if len(req.ToolResults()) == 0 {
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", runtime.ToolAskAgent, map[string]string{"agent_id": idCalc, "text": "back to you"})}}
		}
		return fakellm.Reply{Text: req.ToolResults()[0]}
	}
	reply, _, _, _ = delegatingTurn(t, askBack, d, agent.Trace{ID: "t", Agents: []string{idCalc}})
	if !strings.Contains(reply, string(agent.CodeDelegationLoop)) {
		t.Errorf("A→B→A: %q", reply)
	}
	// Three hops already: a fourth is refused.
	reply, _, _, _ = delegatingTurn(t, askBack, d, agent.Trace{ID: "t", Agents: []string{idPoet, strings.Repeat("d", agent.IDLen), strings.Repeat("e", agent.IDLen)}})
	if !strings.Contains(reply, string(agent.CodeDelegationDepth)) {
		t.Errorf("fourth hop: %q", reply)
	}
}

func TestDelegationBudgetCutsNineCallsAtEight(t *testing.T) {
	calls := 0
	nine := func(req fakellm.Request) fakellm.Reply {
		if len(req.ToolResults()) == 0 {
			var cs []fakellm.ToolCall
			// Four agents, each asked twice (agent.MaxVisits), then a ninth call.
			for i := range 9 {
				id := strings.Repeat(string(rune('d'+i%4)), agent.IDLen)
				cs = append(cs, fakellm.Call(fmt.Sprint("c", i), runtime.ToolAskAgent, map[string]string{"agent_id": id, "text": "again"}))
			}
			return fakellm.Reply{Calls: cs}
		}
		calls++
		if req.ToolChoice != "none" {
			t.Errorf("the budget is spent, yet tool_choice is %q", req.ToolChoice)
		}
		return fakellm.Reply{Text: "done: " + req.ToolResults()[8]}
	}
	d := &fakeDelegator{}
	reply, _, _, err := delegatingTurn(t, nine, d, agent.NewTrace())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.asked) != agent.MaxDelegations || !strings.Contains(reply, string(agent.CodeDelegationBudget)) || calls != 1 {
		t.Errorf("asked %d times (want %d), reply %q", len(d.asked), agent.MaxDelegations, reply)
	}
}

func TestDelegationFailureIsAToolResult(t *testing.T) {
	d := &fakeDelegator{fail: map[string]error{idCalc: agent.ErrHostUnreachable}}
	reply, steps, _, err := delegatingTurn(t, askBoth, d, agent.NewTrace())
	if err != nil {
		t.Fatalf("a failed delegation ended the turn: %v", err)
	}
	if !strings.Contains(reply, "could not be reached") || !strings.Contains(reply, "autumn wind") {
		t.Errorf("reply %q: the model should read the failure and go on", reply)
	}
	if steps[1].Error == "" || !steps[1].Done {
		t.Errorf("failed step %+v", steps[1])
	}
	var res map[string]string
	if err := json.Unmarshal([]byte(strings.TrimPrefix(strings.Split(reply, " | ")[0], "Both said: ")), &res); err != nil || res["code"] != string(agent.CodeHostUnreachable) {
		t.Errorf("tool result %q (%v)", reply, err)
	}
}

func TestDelegationEndsWithTheTurn(t *testing.T) {
	d := &fakeDelegator{hold: make(chan struct{})} // the host never answers
	model := &fakellm.Server{Model: "demo", Script: askBoth}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo", Delegate: true}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil },
		runtime.RuntimeOptions{AllowPrivate: true, Timeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = rt.Close() })
	rt.Delegator = d
	_, err := rt.Answer(t.Context(), agent.Turn{AgentID: idSelf, Text: "x", Trace: agent.NewTrace()}, nil)
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("a delegation that outlives the turn: %v, want the turn's timeout", err)
	}
}
