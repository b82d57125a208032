package a2a_test

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// approvalOf is the approval data part of a status message.
func approvalOf(t *testing.T, m *a2a.Message) map[string]any {
	t.Helper()
	if m == nil {
		t.Fatal("no status message")
	}
	for _, p := range m.Parts {
		if d, ok := p.(a2a.DataPart); ok {
			if ap, ok := d.Data["approval"].(map[string]any); ok {
				return ap
			}
		}
	}
	t.Fatalf("no approval data part in %+v", m.Parts)
	return nil
}

// TestA2AToolApproval: a tool call that waits for approval leaves the
// task in input-required, the prompt as text and the call (id, tool,
// server, arguments) as a data part; a data part answering it resumes
// the same task, which runs the call and completes; "deny" as text on
// another task runs nothing; an answer naming an approval that is not
// waiting fails the task saying what to do.
func TestA2AToolApproval(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), nil)
	UseRuntime(e)
	id, notes := e.SeedNotesAgent("alice", "note-bot")
	path := "/a2a/" + id

	first := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("note buy milk", ""))))
	if first.Status.State != a2a.TaskStateInputRequired || !strings.Contains(text(first.Status.Message.Parts), "save_note") {
		t.Fatalf("task %s: %+v", first.Status.State, first.Status.Message)
	}
	ap := approvalOf(t, first.Status.Message)
	if ap["tool"] != "save_note" || ap["args"] != `{"text":"buy milk"}` || ap["id"] == "" || !strings.Contains(ap["server"].(string), "/mcp") {
		t.Errorf("approval %+v", ap)
	}
	if notes.Saves() != 0 {
		t.Fatal("save_note ran before approval")
	}
	yes := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"approval": map[string]any{"id": ap["id"], "approve": true}}})
	yes.TaskID = first.ID
	done := resultOf[a2a.Task](t, call(e, path, "message/send", send(yes)))
	if done.ID != first.ID || done.Status.State != a2a.TaskStateCompleted || notes.Saves() != 1 {
		t.Fatalf("after approval: %s %s, saves %d", done.ID, done.Status.State, notes.Saves())
	}
	if last := done.Artifacts[len(done.Artifacts)-1]; text(last.Parts) != "done: saved: buy milk" {
		t.Errorf("reply %q", text(last.Parts))
	}

	second := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("note sell cow", ""))))
	no := message("deny", "")
	no.TaskID = second.ID
	denied := resultOf[a2a.Task](t, call(e, path, "message/send", send(no)))
	if denied.Status.State != a2a.TaskStateCompleted || notes.Saves() != 1 ||
		!strings.Contains(text(denied.Artifacts[len(denied.Artifacts)-1].Parts), "denied") {
		t.Errorf("after deny: %s, saves %d", denied.Status.State, notes.Saves())
	}

	third := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("note call mom", ""))))
	stale := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"approval": map[string]any{"id": ap["id"], "approve": true}}})
	stale.TaskID = third.ID
	failed := resultOf[a2a.Task](t, call(e, path, "message/send", send(stale)))
	if failed.Status.State != a2a.TaskStateFailed || !strings.Contains(text(failed.Status.Message.Parts), "Send your request again") || notes.Saves() != 1 {
		t.Errorf("stale approval: %s %q, saves %d", failed.Status.State, text(failed.Status.Message.Parts), notes.Saves())
	}
}
