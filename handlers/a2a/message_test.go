package a2a_test

import (
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

func TestMessageSendCompletesATask(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	in := message("hello there world", "")
	task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(in)))

	if task.Status.State != a2a.TaskStateCompleted || task.ID == "" || task.ContextID == "" {
		t.Fatalf("task = %+v", task)
	}
	if len(task.Artifacts) != 1 || text(task.Artifacts[0].Parts) != "hello there world" || len(task.Artifacts[0].Parts) != 1 {
		t.Errorf("artifacts = %+v", task.Artifacts)
	}
	if len(task.History) != 2 || task.History[0].ID != in.ID || task.History[0].Role != a2a.MessageRoleUser ||
		task.History[1].Role != a2a.MessageRoleAgent || text(task.History[1].Parts) != "hello there world" {
		t.Errorf("history = %+v", task.History)
	}
	for _, m := range task.History {
		if m.TaskID != task.ID || m.ContextID != task.ContextID {
			t.Errorf("history message %+v is not the task's", m)
		}
	}
	// The contextId is the AgentChat conversation, which A2A's anonymous
	// callers own.
	conv, err := e.Store.GetConversation(t.Context(), task.ContextID)
	if err != nil || conv.AgentID != id || conv.OwnerKey != string(chat.A2AAnonymous) {
		t.Fatalf("conversation %s = %+v, %v", task.ContextID, conv, err)
	}
	msgs, err := e.Store.ListMessages(t.Context(), conv.ID, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Text != "hello there world" || msgs[1].Role != agent.RoleAgent {
		t.Errorf("stored messages = %+v, %v", msgs, err)
	}
}

// A second turn with the same contextId continues the conversation: the
// agent sees the first turn. On both store engines: the conversation is
// stored.
func TestSecondTurnSeesTheFirst(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		installFake(e)
		id := e.SeedEcho("memory-bot", "Memory Bot")
		first := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("history", ""))))
		if got := text(first.Artifacts[0].Parts); got != "0 earlier messages" {
			t.Fatalf("first turn = %q", got)
		}
		second := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("history", first.ContextID))))
		if second.ContextID != first.ContextID || second.ID == first.ID {
			t.Fatalf("second task %s in %s, first %s in %s", second.ID, second.ContextID, first.ID, first.ContextID)
		}
		if got := text(second.Artifacts[0].Parts); got != "2 earlier messages" {
			t.Errorf("second turn = %q", got)
		}
	})
}

// A contextId we do not know (or another agent's) starts a new
// conversation, whose id the task returns.
func TestUnknownContextStartsAConversation(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("fresh-bot", "Fresh Bot")
	other := e.SeedEcho("other-bot", "Other Bot")
	theirs := resultOf[a2a.Task](t, call(e, "/a2a/"+other, "message/send", send(message("hi", ""))))
	for _, ctxID := range []string{"client-made-context-id", theirs.ContextID} {
		task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("history", ctxID))))
		if task.ContextID == ctxID || task.ContextID == "" || text(task.Artifacts[0].Parts) != "0 earlier messages" {
			t.Errorf("contextId %q: task %+v", ctxID, task)
		}
		if conv, err := e.Store.GetConversation(t.Context(), task.ContextID); err != nil || conv.AgentID != id {
			t.Errorf("conversation %s = %+v, %v", task.ContextID, conv, err)
		}
	}
}

// A failure of the agent is a failed task whose status message says
// what went wrong (safely), not a JSON-RPC error.
func TestFailedTurnIsAFailedTask(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("broken-bot", "Broken Bot")
	task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("fail", ""))))
	if task.Status.State != a2a.TaskStateFailed || task.Status.Message == nil ||
		text(task.Status.Message.Parts) != agent.ErrBackendUnavailable.Message {
		t.Errorf("task status = %+v", task.Status)
	}
	if len(task.History) != 1 {
		t.Errorf("history = %+v", task.History)
	}
}

func TestStreamEventOrder(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("stream-bot", "Stream Bot")
	events := streamEvents(e, "/a2a/"+id, send(message("one two three", "")))
	var kinds []string
	for _, ev := range events {
		kinds = append(kinds, kind(t, ev))
	}
	want := []string{"task", "status-update", "artifact-update", "artifact-update", "artifact-update", "status-update"}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
	task := resultOf[a2a.Task](t, events[0])
	if task.Status.State != a2a.TaskStateSubmitted || task.ContextID == "" {
		t.Errorf("first event = %+v", task)
	}
	if st := resultOf[a2a.TaskStatusUpdateEvent](t, events[1]); st.Status.State != a2a.TaskStateWorking || st.Final || st.TaskID != task.ID {
		t.Errorf("second event = %+v", st)
	}
	var streamed string
	for i, ev := range events[2:5] {
		a := resultOf[a2a.TaskArtifactUpdateEvent](t, ev)
		if a.Append != (i > 0) || a.TaskID != task.ID || a.ContextID != task.ContextID {
			t.Errorf("artifact event %d = %+v", i, a)
		}
		streamed += text(a.Artifact.Parts)
	}
	if streamed != "one two three" {
		t.Errorf("streamed %q", streamed)
	}
	last := resultOf[a2a.TaskStatusUpdateEvent](t, events[5])
	if last.Status.State != a2a.TaskStateCompleted || !last.Final {
		t.Errorf("last event = %+v", last)
	}

	// The stream's task is kept like any other.
	got := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: task.ID}))
	if got.Status.State != a2a.TaskStateCompleted || text(got.Artifacts[0].Parts) != "one two three" {
		t.Errorf("tasks/get = %+v", got)
	}
}

func TestStreamOfAFailedTurn(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("broken-bot", "Broken Bot")
	last := finalStatus(t, streamEvents(e, "/a2a/"+id, send(message("fail", ""))))
	if last.Status.State != a2a.TaskStateFailed || text(last.Status.Message.Parts) == "" {
		t.Errorf("last event = %+v", last)
	}
}

func TestTasksGet(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("get-bot", "Get Bot")
	other := e.SeedEcho("nosy-bot", "Nosy Bot")
	task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("remember me", ""))))

	got := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: task.ID}))
	if got.ID != task.ID || got.Status.State != a2a.TaskStateCompleted || len(got.History) != 2 {
		t.Errorf("tasks/get = %+v", got)
	}
	one := 1
	got = resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: task.ID, HistoryLength: &one}))
	if len(got.History) != 1 || got.History[0].Role != a2a.MessageRoleAgent {
		t.Errorf("historyLength 1: %+v", got.History)
	}
	// Another agent's endpoint does not see it, nor does an unknown id.
	wantError(t, call(e, "/a2a/"+other, "tasks/get", a2a.TaskQueryParams{ID: task.ID}), -32001, "")
	wantError(t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: "nope"}), -32001, "")
}

// tasks/cancel ends a running turn through its context, and the task
// says so.
func TestTasksCancel(t *testing.T) {
	e, f := newEnv(t, nil)
	id := e.SeedEcho("slow-bot", "Slow Bot")
	no := false
	params := a2a.MessageSendParams{Message: message("block", ""), Config: &a2a.MessageSendConfig{Blocking: &no}}
	task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", params))
	if task.Status.State.Terminal() {
		t.Fatalf("non-blocking send returned %+v", task.Status)
	}
	<-f.blocked // the turn is running

	canceled := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/cancel", a2a.TaskIDParams{ID: task.ID}))
	if canceled.Status.State != a2a.TaskStateCanceled {
		t.Errorf("tasks/cancel = %+v", canceled.Status)
	}
	if err := <-f.ended; err == nil {
		t.Error("the turn's context did not end")
	}
	got := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: task.ID}))
	if got.Status.State != a2a.TaskStateCanceled || text(got.Artifacts[0].Parts) != "working on it" {
		t.Errorf("tasks/get after cancel = %+v", got)
	}

	// A task that has ended cannot be canceled.
	done := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("quick", ""))))
	wantError(t, call(e, "/a2a/"+id, "tasks/cancel", a2a.TaskIDParams{ID: done.ID}), -32002, "")
	wantError(t, call(e, "/a2a/"+id, "tasks/cancel", a2a.TaskIDParams{ID: "nope"}), -32001, "")
}
