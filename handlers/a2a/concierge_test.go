package a2a_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	srv "github.com/agentsite/agentsite/handlers/a2a"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// answerOf reads a concierge answer: a completed task, its reply
// artifact's parts as one agent message.
func answerOf(t *testing.T, r srv.Response) a2a.Message {
	t.Helper()
	task := resultOf[a2a.Task](t, r)
	if task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 || task.ID == "" {
		t.Fatalf("concierge answer = %+v", task)
	}
	return a2a.Message{Role: a2a.MessageRoleAgent, ContextID: task.ContextID, Parts: task.Artifacts[0].Parts}
}

// found reads the agents of a concierge answer (its data part).
func found(t *testing.T, m a2a.Message) []srv.FoundAgent {
	t.Helper()
	for _, p := range m.Parts {
		if dp, ok := p.(a2a.DataPart); ok {
			b, _ := json.Marshal(dp.Data["agents"])
			var out []srv.FoundAgent
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatalf("no data part in %+v", m)
	return nil
}

func TestConciergeFindsAgents(t *testing.T) {
	e, _ := newEnv(t, nil)
	weather := e.SeedAgent("", SimpleInput("weather-bot", "Weather Bot", "weather")).Record.ID
	e.SeedAgent("", SimpleInput("haiku-bot", "Haiku Bot", "poetry"))

	m := answerOf(t, call(e, "/a2a", "message/send", send(message("weather", ""))))
	agents := found(t, m)
	if m.Role != a2a.MessageRoleAgent || len(agents) != 1 || agents[0].ID != weather || agents[0].Name != "Weather Bot" ||
		agents[0].Status != "online" || agents[0].CardURL != e.TS.URL+"/a2a/"+weather+"/agent-card.json" {
		t.Fatalf("answer %+v with agents %+v", m, agents)
	}
	if txt := text(m.Parts); !strings.Contains(txt, "Weather Bot") || !strings.Contains(txt, agents[0].CardURL) {
		t.Errorf("text = %q", txt)
	}

	// A sentence finds the agents named in it.
	agents = found(t, answerOf(t, call(e, "/a2a", "message/send", send(message("I need some poetry please", "")))))
	if len(agents) != 1 || agents[0].Name != "Haiku Bot" {
		t.Errorf("sentence found %+v", agents)
	}
	// Nothing matches: an answer that says so.
	m = answerOf(t, call(e, "/a2a", "message/send", send(message("zzzqqq", ""))))
	if len(found(t, m)) != 0 || !strings.Contains(text(m.Parts), "No agent matches") {
		t.Errorf("no match = %+v", m)
	}
	// Streamed: the one finished task as the one event.
	events := streamEvents(e, "/a2a", send(message("weather", "")))
	if len(events) != 1 || kind(t, events[0]) != "task" {
		t.Errorf("stream = %+v", events)
	}
}

// With metadata agent_id the concierge forwards the message to that agent,
// as POST /a2a/{id} would; its tasks are the concierge's to read.
func TestConciergeForwards(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("relay-bot", "Relay Bot")
	in := message("history", "")
	in.Metadata = map[string]any{"agent_id": id}
	task := resultOf[a2a.Task](t, call(e, "/a2a", "message/send", send(in)))
	if task.Status.State != a2a.TaskStateCompleted || task.Metadata["agent_id"] != id || text(task.Artifacts[0].Parts) != "0 earlier messages" {
		t.Fatalf("forwarded task = %+v", task)
	}
	// Continued through the concierge or the agent's own endpoint alike.
	next := message("history", task.ContextID)
	next.Metadata = map[string]any{"agent_id": id}
	again := resultOf[a2a.Task](t, call(e, "/a2a", "message/send", send(next)))
	if again.ContextID != task.ContextID || text(again.Artifacts[0].Parts) != "2 earlier messages" {
		t.Errorf("second forwarded turn = %+v", again)
	}
	direct := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("history", task.ContextID))))
	if text(direct.Artifacts[0].Parts) != "4 earlier messages" {
		t.Errorf("direct turn = %+v", direct)
	}

	got := resultOf[a2a.Task](t, call(e, "/a2a", "tasks/get", a2a.TaskQueryParams{ID: task.ID}))
	if got.ID != task.ID {
		t.Errorf("tasks/get = %+v", got)
	}
	wantError(t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: task.ID}), -32001, "")

	// Request-level metadata names the agent too; an unknown one is an error.
	p := a2a.MessageSendParams{Message: message("hi", ""), Metadata: map[string]any{"agent_id": "no-such-agent"}}
	wantError(t, call(e, "/a2a", "message/send", p), -32000, "unknown_agent")
	wantError(t, call(e, "/a2a", "message/send", send(message("  ", ""))), -32602, "")
}
