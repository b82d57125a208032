package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// send runs one API turn and returns its answer.
func send(t *testing.T, e *Env, agentID string, in apiwire.MessageIn, headers ...string) apiwire.MessageOut {
	t.Helper()
	resp := e.Do("POST", "/api/v1/agents/"+agentID+"/messages", in, headers...)
	WantStatus(t, resp, http.StatusOK)
	return Decode[apiwire.MessageOut](t, resp)
}

// appendMessage stores a message in a conversation as the chat would.
func appendMessage(t *testing.T, e *Env, convID, role, text string) {
	t.Helper()
	if _, err := e.Store.AppendMessage(t.Context(), store.Message{ConversationID: convID, Role: role, Text: text, CreatedAt: e.Server.Now()}); err != nil {
		t.Fatal(err)
	}
}

func TestAPIConversationHistory(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		UseRuntime(e)
		id := e.SeedEcho("echo", "Echo")
		alice := e.UserToken("alice")
		out := send(t, e, id, apiwire.MessageIn{Text: "hello there"}, Bearer(alice)...)
		step := agent.Step{Tool: "ask_agent", AgentID: id, AgentName: "Echo", Host: "this node", Text: "2+2?", Reply: "4", Done: true}
		appendMessage(t, e, out.ConversationID, agent.RoleStep, StepJSON(t, step))
		appendMessage(t, e, out.ConversationID, agent.RoleStep, "{not a step")

		resp := e.Do("GET", "/api/v1/conversations/"+out.ConversationID, nil, Bearer(alice)...)
		WantStatus(t, resp, http.StatusOK)
		got := Decode[apiwire.Conversation](t, resp)
		if got.ID != out.ConversationID || got.AgentID != id || got.Title != "hello there" || got.CreatedAt.IsZero() || got.UpdatedAt.IsZero() {
			t.Errorf("conversation = %+v", got)
		}
		ms := got.Messages
		if len(ms) != 4 {
			t.Fatalf("messages = %+v, want user, agent and two steps", ms)
		}
		if ms[0].Role != agent.RoleUser || ms[0].Text != "hello there" || ms[1].Role != agent.RoleAgent || ms[1].Text != out.Reply || ms[1].ID != out.MessageID {
			t.Errorf("turn = %+v, %+v; want the message and reply %q (id %d)", ms[0], ms[1], out.Reply, out.MessageID)
		}
		if ms[2].Role != agent.RoleStep || ms[2].Text != "" || ms[2].Step == nil || *ms[2].Step != step {
			t.Errorf("step = %+v (step %+v); want the step object %+v, no text", ms[2], ms[2].Step, step)
		}
		if ms[3].Role != agent.RoleStep || ms[3].Text != "{not a step" || ms[3].Step != nil {
			t.Errorf("malformed step = %+v; want its text and no step object", ms[3])
		}
		for i, m := range ms {
			if m.CreatedAt.IsZero() || (i > 0 && m.ID <= ms[i-1].ID) {
				t.Errorf("message %d = %+v; want a time and ids in order", i, m)
			}
		}
	})
}

// Reading follows the rule of sending: the token's account, or without
// one only anonymous API conversations; anything else is missing.
func TestAPIConversationAccess(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo", "Echo")
	alice, bob := e.UserToken("alice"), e.UserToken("bob")
	mine := send(t, e, id, apiwire.MessageIn{Text: "alice's secret"}, Bearer(alice)...).ConversationID
	anon := send(t, e, id, apiwire.MessageIn{Text: "anyone with the id"}).ConversationID
	now := e.Server.Now()
	if _, err := e.Store.CreateConversation(t.Context(), store.Conversation{ID: "cbrowser", AgentID: id, OwnerKey: "anon:somekey", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}

	type reader struct {
		name    string
		id      string
		headers []string
	}
	for _, tc := range []reader{
		{"the owner", mine, Bearer(alice)},
		{"anonymous, an anonymous conversation", anon, nil},
	} {
		resp := e.Do("GET", "/api/v1/conversations/"+tc.id, nil, tc.headers...)
		WantStatus(t, resp, http.StatusOK)
		if got := Decode[apiwire.Conversation](t, resp); got.ID != tc.id || len(got.Messages) != 2 {
			t.Errorf("%s: %+v", tc.name, got)
		}
	}

	missing := e.Do("GET", "/api/v1/conversations/cnosuchconversation", nil, Bearer(bob)...)
	WantStatus(t, missing, http.StatusNotFound)
	want, _ := io.ReadAll(missing.Body)
	if code := Decode[httpkit.ErrorBody](t, e.Do("GET", "/api/v1/conversations/cnosuch", nil)).Error.Code; code != "unknown_conversation" {
		t.Errorf("missing conversation: code %q, want unknown_conversation", code)
	}
	for _, tc := range []reader{
		{"another user", mine, Bearer(bob)},
		{"anonymous, a user's", mine, nil},
		{"the operator, a user's", mine, Bearer(OperatorToken)},
		{"a user, an anonymous one", anon, Bearer(alice)},
		{"anonymous, a browser's", "cbrowser", nil},
		{"overlong id", strings.Repeat("c", 100), Bearer(alice)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.Do("GET", "/api/v1/conversations/"+tc.id, nil, tc.headers...)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusNotFound || string(body) != string(want) {
				t.Errorf("status %d, body %s; want exactly a missing one's: %s", resp.StatusCode, body, want)
			}
		})
	}

	resp := e.Do("GET", "/api/v1/conversations/"+mine, nil, Bearer("as_nope")...)
	WantStatus(t, resp, http.StatusUnauthorized)
}

func TestAPIConversationLimit(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo", "Echo")
	conv := send(t, e, id, apiwire.MessageIn{Text: "m"}).ConversationID
	for i := range 5 {
		appendMessage(t, e, conv, agent.RoleAgent, fmt.Sprintf("m%d", i))
	}
	texts := func(c apiwire.Conversation) string {
		var out []string
		for _, m := range c.Messages {
			out = append(out, m.Text)
		}
		return strings.Join(out, ",")
	}
	if got := texts(Decode[apiwire.Conversation](t, e.Do("GET", "/api/v1/conversations/"+conv+"?limit=3", nil))); got != "m2,m3,m4" {
		t.Errorf("limit=3: %s, want the newest three, oldest first", got)
	}
	if got := Decode[apiwire.Conversation](t, e.Do("GET", "/api/v1/conversations/"+conv, nil)); len(got.Messages) != 7 {
		t.Errorf("no limit: %d messages, want all 7", len(got.Messages))
	}
	for _, bad := range []string{"0", "201", "-1", "lots"} {
		resp := e.Do("GET", "/api/v1/conversations/"+conv+"?limit="+bad, nil)
		WantStatus(t, resp, http.StatusBadRequest)
		if got := Decode[httpkit.ErrorBody](t, resp).Error; got.Code != "bad_query" || got.Fields["limit"] == "" {
			t.Errorf("limit=%s: %+v, want bad_query on limit", bad, got)
		}
	}
}

// Reading a conversation is not a chat turn: it spends none of the chat
// budget (a burst of 5 at 1 turn a minute).
func TestAPIConversationReadIsNoTurn(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.ChatRateLimit = 1 })
	UseRuntime(e)
	id := e.SeedEcho("echo", "Echo")
	conv := send(t, e, id, apiwire.MessageIn{Text: "hi"}).ConversationID
	for range 10 {
		WantStatus(t, e.Do("GET", "/api/v1/conversations/"+conv, nil), http.StatusOK)
	}
	send(t, e, id, apiwire.MessageIn{Text: "still allowed", ConversationID: conv})
}

// TestAPIAnonymousRepliesAtOnce: anonymous API turns of one client are
// held to AgentChat's rule, chat.DefaultLiveMaxPerOwner replies on their
// way at once; the others are refused (429 rate_limited, saying to wait
// for one to finish), and once the replies are in, new turns are
// accepted (before, 8 parallel anonymous turns were all accepted).
func TestAPIAnonymousRepliesAtOnce(t *testing.T) {
	for _, who := range []string{"anonymous", "a user's token"} {
		t.Run(who, func(t *testing.T) { testAPIRepliesAtOnce(t, who != "anonymous") })
	}
}

// testAPIRepliesAtOnce: the rule for one client, anonymous or with a
// user's token (whose turns count with its WebSocket ones).
func testAPIRepliesAtOnce(t *testing.T, withToken bool) {
	e := NewChat(t)
	id := e.SeedEcho("echo", "Echo")
	var auth []string
	if withToken {
		auth = Bearer(e.UserToken("alice"))
	}
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	type answer struct {
		status int
		body   httpkit.ErrorBody
		reply  string
		err    error
	}
	post := func(text string) answer {
		body := strings.NewReader(fmt.Sprintf(`{"text":%q}`, text))
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.TS.URL+"/api/v1/agents/"+id+"/messages", body)
		if err != nil {
			return answer{err: err}
		}
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(auth); i += 2 {
			req.Header.Set(auth[i], auth[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return answer{err: err}
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		a := answer{status: resp.StatusCode, err: err}
		if resp.StatusCode == http.StatusOK {
			var out apiwire.MessageOut
			a.err = json.Unmarshal(raw, &out)
			a.reply = out.Reply
		} else {
			a.err = json.Unmarshal(raw, &a.body)
		}
		return a
	}
	answers := make(chan answer, 8)
	for i := range 8 {
		go func() { answers <- post(fmt.Sprintf("turn %d", i)) }()
	}
	deadline := time.After(20 * time.Second)
	next := func(what string) answer {
		t.Helper()
		select {
		case a := <-answers:
			if a.err != nil {
				t.Fatalf("%s: %v", what, a.err)
			}
			return a
		case <-deadline:
			t.Fatalf("%s: no answer in time", what)
		}
		return answer{}
	}
	const max = chat.DefaultLiveMaxPerOwner
	// No reply can finish before a release: the first 8-max answers are
	// the refusals, while max turns wait on the agent.
	for i := range 8 - max {
		a := next(fmt.Sprintf("refusal %d", i))
		if a.status != http.StatusTooManyRequests || a.body.Error.Code != string(agent.CodeRateLimited) ||
			!strings.Contains(a.body.Error.Message, "wait for one to finish") {
			t.Fatalf("answer %d while %d replies are on their way: %d %+v, want 429 rate_limited", i, max, a.status, a.body)
		}
	}
	select {
	case a := <-answers:
		t.Fatalf("a turn over the bound was accepted: %+v", a)
	default:
	}
	for range max {
		slow.Release()
	}
	for i := range max {
		if a := next(fmt.Sprintf("reply %d", i)); a.status != http.StatusOK || !strings.HasPrefix(a.reply, SlowFirst+"turn ") {
			t.Errorf("held turn %d: %d %q %+v, want its reply", i, a.status, a.reply, a.body)
		}
	}
	// The replies are in: a new turn is accepted.
	slow.Release()
	go func() { answers <- post("after") }()
	if a := next("after"); a.status != http.StatusOK || a.reply != SlowFirst+"after" {
		t.Errorf("turn after the replies: %d %q %+v, want accepted", a.status, a.reply, a.body)
	}
}
