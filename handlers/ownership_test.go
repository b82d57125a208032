package handlers_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/chatws"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// An agent id is derived from the node's key and the name only: these tests
// pin that a deleted agent's id cannot pass to another account, and that a
// conversation never reaches a backend of another owner than it began with.

func TestDeletedNameStaysReserved(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		alice, bob := e.UserToken("alice"), e.UserToken("bob")
		resp := e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(alice)...)
		WantStatus(t, resp, http.StatusCreated)
		first := Decode[apiwire.Agent](t, resp)
		WantStatus(t, e.Do("DELETE", "/api/v1/agents/"+first.ID, nil, Bearer(alice)...), http.StatusNoContent)

		// Another account: refused on the name, over the API and the form.
		resp = e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(bob)...)
		WantStatus(t, resp, http.StatusUnprocessableEntity)
		if got := Decode[httpkit.ErrorBody](t, resp).Error.Fields["name"]; got != registry.MsgNameReserved {
			t.Errorf("API: fields.name = %q, want %q", got, registry.MsgNameReserved)
		}
		form := e.Visitor()
		form.Signup("carol", "password-carol")
		doc := ParsePage(t, form.PostForm("/register", RegisterForm("name", "weather-bot")), http.StatusUnprocessableEntity)
		if got := Text(MustTestid(t, doc, "error-name")); !strings.Contains(got, registry.MsgNameReserved) {
			t.Errorf("form: name error = %q, want %q", got, registry.MsgNameReserved)
		}
		if l, err := e.Store.GetAgent(t.Context(), first.ID); err != nil || !l.Record.Tombstone || l.Record.Owner != "alice" {
			t.Fatalf("after refused takeovers: %+v, %v; want alice's tombstone", l.Record, err)
		}

		// The owner may take it back, and so may the operator.
		resp = e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(alice)...)
		WantStatus(t, resp, http.StatusCreated)
		if again := Decode[apiwire.Agent](t, resp); again.ID != first.ID || again.Owner != "alice" {
			t.Errorf("alice re-registered %+v", again)
		}
		WantStatus(t, e.Do("DELETE", "/api/v1/agents/"+first.ID, nil, Bearer(alice)...), http.StatusNoContent)
		WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(OperatorToken)...), http.StatusCreated)
	})
}

// recordingHook is a webhook backend that answers "ok" and keeps every
// request body it receives.
type recordingHook struct {
	mu     sync.Mutex
	bodies []string
}

func newRecordingHook(t *testing.T) (*recordingHook, string) {
	t.Helper()
	h := &recordingHook{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, string(b))
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"reply":"ok"}`))
	}))
	t.Cleanup(ts.Close)
	return h, ts.URL + "/hook"
}

func (h *recordingHook) received() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.bodies...)
}

func hookInput(name, hookURL string) registry.Input {
	in := SimpleInput(name, "Helper")
	in.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: hookURL}
	return in
}

func TestConversationRefusedAfterOwnerChange(t *testing.T) {
	e := NewChat(t)
	e.Server.Registry.AllowPrivate = true
	oldHook, oldURL := newRecordingHook(t)
	newHook, newURL := newRecordingHook(t)
	id := e.SeedAgent("alice", hookInput("helper", oldURL)).Record.ID
	const secret = "my PIN is 4921"

	// One conversation per surface, each started with the secret.
	carol := e.UserToken("carol")
	resp := e.Do("POST", "/api/v1/agents/"+id+"/messages", apiwire.MessageIn{Text: secret}, Bearer(carol)...)
	WantStatus(t, resp, http.StatusOK)
	apiConv := Decode[apiwire.MessageOut](t, resp).ConversationID

	browser := e.Visitor()
	browser.Page("/chat/"+id, http.StatusOK)
	resp = browser.PostForm("/chat/"+id, url.Values{"text": {secret}, "c": {""}})
	WantStatus(t, resp, http.StatusSeeOther)
	u, err := url.Parse(Location(t, resp))
	if err != nil {
		t.Fatal(err)
	}
	formConv := u.Query().Get("c")

	ws := browser.MustDial()
	_, done := Turn(t, ws, chatws.In{AgentID: id, Text: secret})
	if done.Type != "done" {
		t.Fatalf("WebSocket turn: %+v", done)
	}
	wsConv := done.ConversationID

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&mcp.StreamableClientTransport{Endpoint: e.TS.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type mcpOut struct {
		ConversationID string            `json:"conversation_id"`
		Error          httpkit.ErrorJSON `json:"error"`
	}
	mcpSend := func(args map[string]any) (out mcpOut, isError bool) {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "send_message", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &out)
		return out, res.IsError
	}
	out, isError := mcpSend(map[string]any{"agent_id": id, "text": secret})
	mcpConv := out.ConversationID
	if isError || mcpConv == "" {
		t.Fatalf("MCP send_message = %+v", out)
	}
	if n := len(oldHook.received()); n != 4 {
		t.Fatalf("alice's backend got %d turns, want 4", n)
	}

	// Alice deletes the agent; the operator registers the name again, with
	// another backend.
	if err := e.Server.Registry.Delete(t.Context(), registry.Operator, id); err != nil {
		t.Fatal(err)
	}
	if l := e.SeedAgent("", hookInput("helper", newURL)); l.Record.ID != id || l.Record.Owner != "" {
		t.Fatalf("re-registered %+v", l.Record)
	}

	const next = "and what was my PIN?"
	resp = e.Do("POST", "/api/v1/agents/"+id+"/messages", apiwire.MessageIn{Text: next, ConversationID: apiConv}, Bearer(carol)...)
	WantStatus(t, resp, http.StatusConflict)
	if got := Decode[httpkit.ErrorBody](t, resp).Error.Code; got != "agent_changed_owner" {
		t.Errorf("API: code %q, want agent_changed_owner", got)
	}

	doc := ParsePage(t, browser.PostForm("/chat/"+id, url.Values{"text": {next}, "c": {formConv}}), http.StatusConflict)
	if got := Text(MustTestid(t, doc, "composer-error")); !strings.Contains(got, "belongs to someone else") {
		t.Errorf("form: composer error = %q", got)
	}

	if _, f := Turn(t, ws, chatws.In{AgentID: id, ConversationID: wsConv, Text: next}); f.Type != "error" || f.Code != "agent_changed_owner" {
		t.Errorf("WebSocket: frame %+v, want error agent_changed_owner", f)
	}

	if out, isError := mcpSend(map[string]any{"agent_id": id, "text": next, "conversation_id": mcpConv}); !isError || out.Error.Code != "agent_changed_owner" {
		t.Errorf("MCP: isError %v, %+v; want agent_changed_owner", isError, out)
	}

	if got := newHook.received(); len(got) != 0 {
		t.Fatalf("the new owner's backend received %d turns of old conversations: %q", len(got), got)
	}
	for _, c := range []string{apiConv, formConv, wsConv, mcpConv} {
		msgs, err := e.Store.ListMessages(t.Context(), c, 10)
		if err != nil || len(msgs) != 2 {
			t.Errorf("conversation %s: %d messages (%v), want the first turn only", c, len(msgs), err)
		}
	}

	// A new conversation goes to the new backend, without the old history.
	resp = e.Do("POST", "/api/v1/agents/"+id+"/messages", apiwire.MessageIn{Text: "hello"}, Bearer(carol)...)
	WantStatus(t, resp, http.StatusOK)
	got := newHook.received()
	if len(got) != 1 || strings.Contains(got[0], "4921") {
		t.Errorf("new backend received %q, want one turn without the PIN", got)
	}
}

func TestDemoAgentsDoNotTakeUsersName(t *testing.T) {
	e := New(t)
	demo := SimpleInput("echo", "Echo")
	theirs := e.SeedAgent("bob", hookInput("echo", "https://bob.example/hook"))
	gone := e.SeedAgent("carol", SimpleInput("calculator", "Carol's"))
	if err := e.Server.Registry.Delete(t.Context(), registry.Operator, gone.Record.ID); err != nil {
		t.Fatal(err)
	}

	// Every start publishes the demo agents again.
	for range 2 {
		for _, in := range []registry.Input{demo, SimpleInput("calculator", "Calculator")} {
			if _, err := e.Server.Registry.EnsureOperatorAgent(t.Context(), in); !errors.Is(err, registry.ErrNameTaken) {
				t.Errorf("EnsureOperatorAgent(%s) = %v, want registry.ErrNameTaken", in.Name, err)
			}
		}
	}
	l, err := e.Store.GetAgent(t.Context(), theirs.Record.ID)
	if err != nil || l.Record.Owner != "bob" || l.Record.Seq != theirs.Record.Seq || l.Record.DisplayName != "Helper" {
		t.Errorf("bob's echo after the demo agents: %+v, %v", l.Record, err)
	}
	if b, err := e.Store.GetBackend(t.Context(), theirs.Record.ID); err != nil || b.URL != "https://bob.example/hook" {
		t.Errorf("bob's backend after the demo agents: %+v, %v", b, err)
	}
	if l, _ := e.Store.GetAgent(t.Context(), gone.Record.ID); !l.Record.Tombstone || l.Record.Owner != "carol" {
		t.Errorf("carol's deleted calculator was taken: %+v", l.Record)
	}

	// An operator's demo agent is still refreshed.
	op, err := e.Server.Registry.EnsureOperatorAgent(t.Context(), SimpleInput("greeter", "Greeter"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.Server.Registry.EnsureOperatorAgent(t.Context(), SimpleInput("greeter", "Greeter"))
	if err != nil || again.Record.ID != op.Record.ID || again.Record.Seq <= op.Record.Seq {
		t.Errorf("refreshing the operator's agent: %+v, %v", again.Record, err)
	}
}
