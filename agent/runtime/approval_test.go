package runtime_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
)

// notesScript lists the notes, then saves one, then answers with the
// last tool result it read.
func notesScript(t *testing.T) fakellm.Script {
	return func(req fakellm.Request) fakellm.Reply {
		switch res := req.ToolResults(); len(res) {
		case 0:
			return fakellm.Reply{Text: "Looking. ", Calls: []fakellm.ToolCall{fakellm.Call("l1", named(t, req, "list_notes", ""), map[string]string{})}}
		case 1:
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("s1", named(t, req, "save_note", ""), map[string]string{"text": "buy milk"})}}
		default:
			return fakellm.Reply{Text: "done: " + res[len(res)-1]}
		}
	}
}

// clock is a test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func newNotesAgent(t *testing.T, allow []string, opts runtime.RuntimeOptions) (*toolAgent, *fakenotes.Notes) {
	t.Helper()
	notes := fakenotes.New()
	srv := httptest.NewServer(notes.Handler())
	t.Cleanup(srv.Close)
	return newToolAgent(t, notesScript(t), []agent.ToolServer{{URL: srv.URL + "/mcp", Allow: allow}}, opts), notes
}

// ask runs a turn of conversation conv as caller.
func (a *toolAgent) ask(ctx context.Context, caller, conv, text string, answer *agent.ApprovalAnswer, trace agent.Trace) (string, error) {
	if trace.ID == "" {
		trace = agent.NewTrace()
	}
	return a.rt.Answer(agent.WithCaller(ctx, caller), agent.Turn{AgentID: idSelf, ConversationID: conv, Text: text,
		Trace: trace, Approval: answer}, func(string) error { return nil })
}

// TestApprovalApproveRunsTheCall: the read-only tool runs at once; the
// destructive one ends the turn waiting for approval (tool, server,
// arguments), not called; approving it runs it, the model reads the
// result and the turn goes on from there.
func TestApprovalApproveRunsTheCall(t *testing.T) {
	a, notes := newNotesAgent(t, nil, runtime.RuntimeOptions{})
	_, err := a.ask(t.Context(), "user:1", "c1", "note: buy milk", nil, agent.Trace{})
	ap, ok := agent.PendingApproval(err)
	if !ok {
		t.Fatalf("turn ended with %v, want a pending approval", err)
	}
	prompt, _ := agent.InputPrompt(err)
	if ap.Tool != "save_note" || !strings.Contains(ap.Server, "/mcp") || ap.Args != `{"text":"buy milk"}` || ap.ID == "" ||
		!strings.Contains(prompt, "save_note") || !strings.Contains(prompt, "buy milk") {
		t.Errorf("approval %+v, prompt %q", ap, prompt)
	}
	if notes.Saves() != 0 {
		t.Fatalf("save_note ran %d times before approval", notes.Saves())
	}
	if got := len(a.model.Requests()); got != 2 {
		t.Errorf("%d model requests before the pause, want 2 (list, then save)", got)
	}
	reply, err := a.ask(t.Context(), "user:1", "c1", "Approve", &agent.ApprovalAnswer{ID: ap.ID, Approve: true}, agent.Trace{})
	if err != nil || reply != "done: saved: buy milk" {
		t.Fatalf("after approval: %q, %v", reply, err)
	}
	if notes.Saves() != 1 {
		t.Errorf("save_note ran %d times, want 1", notes.Saves())
	}
	// The resumed request carries the whole exchange: the list's result
	// and the save's.
	reqs := a.model.Requests()
	if res := reqs[len(reqs)-1].ToolResults(); len(res) != 2 || !strings.Contains(res[0], "no notes") {
		t.Errorf("resumed request's tool results %q", res)
	}
	// Answered once: the same id again is no longer waiting.
	if _, err := a.ask(t.Context(), "user:1", "c1", "Approve", &agent.ApprovalAnswer{ID: ap.ID, Approve: true}, agent.Trace{}); !errors.Is(err, agent.ErrUnknownApproval) {
		t.Errorf("second answer: %v, want unknown_approval", err)
	}
}

// TestApprovalDenyDoesNotCall: "deny" (as a word) tells the model the
// person denied the call; the tool is never called.
func TestApprovalDenyDoesNotCall(t *testing.T) {
	a, notes := newNotesAgent(t, nil, runtime.RuntimeOptions{})
	if _, err := a.ask(t.Context(), "user:1", "c1", "note: buy milk", nil, agent.Trace{}); err == nil {
		t.Fatal("no pause")
	}
	reply, err := a.ask(t.Context(), "user:1", "c1", "deny", nil, agent.Trace{})
	if err != nil || !strings.Contains(reply, "denied") {
		t.Fatalf("after deny: %q, %v", reply, err)
	}
	if notes.Saves() != 0 {
		t.Errorf("save_note ran %d times after a deny", notes.Saves())
	}
}

// TestApprovalOnlyItsCallerAndTime: another caller, another
// conversation, or an expired approval cannot answer it; each gets
// unknown_approval saying what to do.
func TestApprovalOnlyItsCallerAndTime(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, notes := newNotesAgent(t, nil, runtime.RuntimeOptions{Now: clk.Now, ApprovalTTL: 15 * time.Minute})
	_, err := a.ask(t.Context(), "user:1", "c1", "note", nil, agent.Trace{})
	ap, ok := agent.PendingApproval(err)
	if !ok {
		t.Fatalf("no pause: %v", err)
	}
	// The page of the conversation shows the waiting call to its caller
	// alone (runtime.WaitingApproval).
	if got, ok := a.rt.WaitingApproval(agent.WithCaller(t.Context(), "user:1"), idSelf, "c1"); !ok || got.ID != ap.ID {
		t.Errorf("the waiting call for its caller: %+v %v, want %s", got, ok, ap.ID)
	}
	for _, tc := range []struct{ caller, conv string }{{"user:2", "c1"}, {"user:1", "c2"}} {
		if _, ok := a.rt.WaitingApproval(agent.WithCaller(t.Context(), tc.caller), idSelf, tc.conv); ok {
			t.Errorf("%s in %s sees the waiting call", tc.caller, tc.conv)
		}
	}
	yes := &agent.ApprovalAnswer{ID: ap.ID, Approve: true}
	for _, tc := range []struct{ caller, conv string }{{"user:2", "c1"}, {"user:1", "c2"}} {
		if _, err := a.ask(t.Context(), tc.caller, tc.conv, "approve", yes, agent.Trace{}); !errors.Is(err, agent.ErrUnknownApproval) {
			t.Errorf("%s in %s: %v, want unknown_approval", tc.caller, tc.conv, err)
		}
	}
	clk.add(15 * time.Minute)
	_, err = a.ask(t.Context(), "user:1", "c1", "approve", yes, agent.Trace{})
	if !errors.Is(err, agent.ErrUnknownApproval) || !strings.Contains(agent.AsError(err).Message, "Send your request again") {
		t.Errorf("expired: %v", err)
	}
	if _, ok := a.rt.WaitingApproval(agent.WithCaller(t.Context(), "user:1"), idSelf, "c1"); ok {
		t.Error("an expired call is still shown as waiting")
	}
	if notes.Saves() != 0 {
		t.Errorf("save_note ran %d times", notes.Saves())
	}
}

// TestApprovalNeverCrossesNodes: a turn another agent passed on, or one
// from another node, is not paused: the call is refused, the model
// reads why, and the tool is not called.
func TestApprovalNeverCrossesNodes(t *testing.T) {
	a, notes := newNotesAgent(t, nil, runtime.RuntimeOptions{})
	delegated, err := agent.NewTrace().Pass(idCalc, idSelf)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := a.ask(t.Context(), "user:1", "c1", "note", nil, delegated)
	if err != nil || !strings.Contains(reply, "needs a person's approval") {
		t.Errorf("delegated: %q, %v", reply, err)
	}
	reply, err = a.rt.Answer(t.Context(), agent.Turn{AgentID: idSelf, ConversationID: "c2", Text: "note", Trace: agent.NewTrace(),
		FromPeer: "peer:12D3KooW"}, nil)
	if err != nil || !strings.Contains(reply, "needs a person's approval") {
		t.Errorf("from a peer: %q, %v", reply, err)
	}
	if notes.Saves() != 0 {
		t.Errorf("save_note ran %d times", notes.Saves())
	}
}

// TestApprovalAllowedAndBounded: a tool the owner allows runs unasked;
// the calls waiting per agent are bounded (the next is refused to the
// model, not kept).
func TestApprovalAllowedAndBounded(t *testing.T) {
	a, notes := newNotesAgent(t, []string{"save_note"}, runtime.RuntimeOptions{})
	if reply, err := a.ask(t.Context(), "user:1", "c1", "note", nil, agent.Trace{}); err != nil || reply != "Looking. done: saved: buy milk" {
		t.Errorf("allowed: %q, %v", reply, err)
	}
	if notes.Saves() != 1 {
		t.Errorf("allowed save_note ran %d times", notes.Saves())
	}
	b, _ := newNotesAgent(t, nil, runtime.RuntimeOptions{ApprovalsPerAgent: 2})
	for _, conv := range []string{"c1", "c2"} {
		if _, err := b.ask(t.Context(), "user:1", conv, "note", nil, agent.Trace{}); err == nil {
			t.Fatalf("%s: no pause", conv)
		}
	}
	reply, err := b.ask(t.Context(), "user:1", "c3", "note", nil, agent.Trace{})
	if err != nil || !strings.Contains(reply, "too many tool calls are waiting") {
		t.Errorf("over the bound: %q, %v", reply, err)
	}
}
