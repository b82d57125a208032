package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
)

// An agent that ends its turn asking for input (agent.NeedsInput) leaves
// its task in input-required, its prompt the status message; the next
// message on the task resumes it as another turn of the same task and
// conversation, and the task keeps every message and each turn's reply.
// Once the task has ended, it takes no further input.
func TestInputRequiredThenResume(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("asking-bot", "Asking Bot")
	path := "/a2a/" + id
	first := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("ask:which one?", ""))))
	if first.Status.State != a2a.TaskStateInputRequired || first.Status.Message == nil || text(first.Status.Message.Parts) != "which one?" {
		t.Fatalf("task = %+v, want input-required asking which one?", first.Status)
	}

	follow := message("the blue one", "")
	follow.TaskID = first.ID
	done := resultOf[a2a.Task](t, call(e, path, "message/send", send(follow)))
	if done.ID != first.ID || done.ContextID != first.ContextID || done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("follow-up = %s %s %s, want task %s completed", done.ID, done.ContextID, done.Status.State, first.ID)
	}
	var hist []string
	for _, m := range done.History {
		hist = append(hist, string(m.Role)+":"+text(m.Parts))
		if m.TaskID != first.ID {
			t.Errorf("history message %+v is not the task's", m)
		}
	}
	want := []string{"user:ask:which one?", "agent:which one?", "user:the blue one", "agent:the blue one"}
	if len(hist) != len(want) || hist[0] != want[0] || hist[1] != want[1] || hist[2] != want[2] || hist[3] != want[3] {
		t.Errorf("history = %q, want %q", hist, want)
	}
	if len(done.Artifacts) != 2 || text(done.Artifacts[0].Parts) != "let me see" || text(done.Artifacts[1].Parts) != "the blue one" ||
		done.Artifacts[0].ID == done.Artifacts[1].ID {
		t.Errorf("artifacts = %+v, want each turn's reply", done.Artifacts)
	}
	// The conversation holds the turns too: the prompt is the agent's reply.
	msgs, err := e.Store.ListMessages(t.Context(), first.ContextID, 10)
	if err != nil || len(msgs) != 4 || msgs[1].Text != "which one?" || msgs[3].Text != "the blue one" {
		t.Errorf("stored messages = %+v, %v", msgs, err)
	}

	again := message("and then?", "")
	again.TaskID = first.ID
	wantError(t, call(e, path, "message/send", send(again)), -32602, "")
}

// Streamed, a turn that asks for input ends its stream with a final
// input-required status; a stream of the follow-up carries the next turn.
func TestInputRequiredStreams(t *testing.T) {
	e, _ := newEnv(t, nil)
	path := "/a2a/" + e.SeedEcho("asking-bot", "Asking Bot")
	events := streamEvents(e, path, send(message("ask:more?", "")))
	last := finalStatus(t, events)
	if last.Status.State != a2a.TaskStateInputRequired || text(last.Status.Message.Parts) != "more?" {
		t.Fatalf("last event = %+v", last)
	}
	follow := message("here", "")
	follow.TaskID = last.TaskID
	events = streamEvents(e, path, send(follow))
	if end := finalStatus(t, events); end.Status.State != a2a.TaskStateCompleted || end.TaskID != last.TaskID {
		t.Errorf("follow-up stream ended %+v", end)
	}
}

// A task waiting for input is canceled at once: no turn runs to stop.
func TestCancelWhileWaitingForInput(t *testing.T) {
	e, _ := newEnv(t, nil)
	path := "/a2a/" + e.SeedEcho("asking-bot", "Asking Bot")
	task := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("ask:well?", ""))))
	got := resultOf[a2a.Task](t, call(e, path, "tasks/cancel", a2a.TaskIDParams{ID: task.ID}))
	if got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("canceled = %+v", got.Status)
	}
	follow := message("too late", "")
	follow.TaskID = task.ID
	wantError(t, call(e, path, "message/send", send(follow)), -32602, "")
}

// Each finished step of a turn (here a tool call) is in the task's
// history, between the person's message and the reply, as a message of
// the agent's with a line for people and the step as data; a stream
// tells of it as a working status.
func TestStepsInTaskHistory(t *testing.T) {
	e, _ := newEnv(t, nil)
	path := "/a2a/" + e.SeedEcho("tool-bot", "Tool Bot")
	task := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("tool:forecast", ""))))
	if task.Status.State != a2a.TaskStateCompleted || len(task.History) != 3 {
		t.Fatalf("task %s with %d messages, want completed with the message, the step and the reply", task.Status.State, len(task.History))
	}
	step := task.History[1]
	if step.Role != a2a.MessageRoleAgent || step.Metadata["agentsite_step"] != true || text(step.Parts) != "Called forecast on tools.example/mcp" {
		t.Errorf("step message = %+v", step)
	}
	var data map[string]any
	for _, p := range step.Parts {
		if d, ok := p.(a2a.DataPart); ok {
			data = d.Data
		}
	}
	if data["tool"] != "call_tool" || data["name"] != "forecast" || data["reply"] != "sunny" || data["duration_ms"] != float64(12) {
		t.Errorf("step data = %v", data)
	}
	if text(task.History[2].Parts) != "used forecast" {
		t.Errorf("reply = %q", text(task.History[2].Parts))
	}
	working := 0
	for _, ev := range streamEvents(e, path, send(message("tool:forecast", ""))) {
		var su struct {
			Kind   string `json:"kind"`
			Status struct {
				State   a2a.TaskState `json:"state"`
				Message *a2a.Message  `json:"message"`
			} `json:"status"`
		}
		if json.Unmarshal(ev.Result, &su) == nil && su.Kind == "status-update" && su.Status.State == a2a.TaskStateWorking &&
			su.Status.Message != nil && text(su.Status.Message.Parts) == "Called forecast on tools.example/mcp" {
			working++
		}
	}
	if working != 1 {
		t.Errorf("the stream told of the step %d times, want once", working)
	}
}
