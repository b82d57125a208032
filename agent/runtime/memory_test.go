package runtime_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// mapMemory is a runtime.Memory in a map, per person and agent.
type mapMemory struct {
	mu    sync.Mutex
	facts map[string][]string
}

func memKey(person int64, agentID string) string { return agentID + "/" + string(rune('0'+person)) }

func (m *mapMemory) Remember(_ context.Context, person int64, agentID, fact string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey(person, agentID)
	m.facts[k] = append([]string{fact}, m.facts[k]...)
	return 0, nil
}

func (m *mapMemory) Facts(_ context.Context, person int64, agentID string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.facts[memKey(person, agentID)]...), nil
}

// memoryScript calls remember for "remember: X" and recall for
// "recall: X", then answers with the tool's result.
func memoryScript(req fakellm.Request) fakellm.Reply {
	if res := req.ToolResults(); len(res) > 0 {
		return fakellm.Reply{Text: "tool said " + res[len(res)-1]}
	}
	last := req.LastUser()
	if fact, ok := strings.CutPrefix(last, "remember: "); ok {
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("m1", "remember", map[string]string{"fact": fact})}}
	}
	if q, ok := strings.CutPrefix(last, "recall: "); ok {
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("m2", "recall", map[string]string{"query": q})}}
	}
	return fakellm.Reply{Text: "plain"}
}

// TestLLMMemoryTools: an agent with memory is offered remember and
// recall; what it remembers of a person in one conversation it recalls in
// another, by a word of the query; another person, an anonymous caller
// and an agent without memory get none of it.
func TestLLMMemoryTools(t *testing.T) {
	model := &fakellm.Server{Model: "demo", Script: memoryScript}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo", Memory: true}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil }, runtime.RuntimeOptions{AllowPrivate: true})
	t.Cleanup(func() { _ = rt.Close() })
	rt.Memory = &mapMemory{facts: map[string][]string{}}
	ask := func(person int64, conv, text string) (string, []agent.Step) {
		t.Helper()
		var steps []agent.Step
		reply, err := rt.Answer(t.Context(), agent.Turn{AgentID: "a1", ConversationID: conv, Person: person, Text: text,
			OnStep: func(s agent.Step) { steps = append(steps, s) }}, nil)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		return reply, steps
	}

	reply, steps := ask(1, "c1", "remember: Alice's cat is called Tom")
	if !strings.Contains(reply, `"remembered":"Alice's cat is called Tom"`) {
		t.Fatalf("remember: %q", reply)
	}
	if len(steps) != 2 || steps[1].Name != "remember" || steps[1].Server != "memory" || !steps[1].Done || steps[1].Error != "" {
		t.Errorf("remember steps %+v", steps)
	}
	ask(1, "c1", "remember: Alice lives in Lyon")
	if reply, _ := ask(1, "c2", "recall: what is the CAT's name?"); !strings.Contains(reply, "Alice's cat is called Tom") || strings.Contains(reply, "Lyon") {
		t.Errorf("recall in another conversation: %q", reply)
	}
	if reply, _ := ask(1, "c3", "recall: "); !strings.Contains(reply, `["Alice lives in Lyon","Alice's cat is called Tom"]`) {
		t.Errorf("recall of everything, newest first: %q", reply)
	}
	if reply, _ := ask(2, "c4", "recall: cat"); !strings.Contains(reply, `"facts":[]`) {
		t.Errorf("another person recalls %q", reply)
	}
	reply, steps = ask(0, "c5", "remember: anonymous fact")
	if !strings.Contains(reply, "facts are kept only for people signed in") || len(steps) != 2 || steps[1].Error == "" {
		t.Errorf("an anonymous caller: %q, steps %+v", reply, steps)
	}
	for _, r := range model.Requests() {
		names := offeredNames(r)
		if !strings.Contains(names, "remember") || !strings.Contains(names, "recall") {
			t.Fatalf("the memory tools were not offered: %s", names)
		}
	}

	// Without memory in its backend, an agent is offered no tools.
	b.Memory = false
	n := len(model.Requests())
	if reply, _ := ask(1, "c6", "hello"); reply != "plain" {
		t.Fatalf("reply %q", reply)
	}
	if got := model.Requests()[n]; len(got.Tools) != 0 {
		t.Errorf("tools offered without memory: %s", offeredNames(got))
	}
}

func offeredNames(req fakellm.Request) string {
	var names []string
	for _, raw := range req.Tools {
		names = append(names, string(raw))
	}
	return strings.Join(names, "\n")
}
