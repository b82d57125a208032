package chatws_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/chatws"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// onChatPage seeds an echo agent on e and a visitor who opened its chat
// page, which gives them the session a socket needs.
func onChatPage(t *testing.T, e *Env) (id string, v *Env) {
	t.Helper()
	id = e.SeedEcho("echo-bot", "Echo Bot")
	v = e.Visitor()
	v.Page("/chat/"+id, http.StatusOK)
	return id, v
}

func TestChatWebSocket(t *testing.T) {
	e := NewChat(t)
	id, v := onChatPage(t, e)
	c := v.MustDial()

	// A whole turn: chunks, then done; both messages stored.
	chunks, done := Turn(t, c, chatws.In{AgentID: id, Text: "hello planet earth"})
	if done.Type != "done" || done.ConversationID == "" || done.MessageID == 0 {
		t.Fatalf("final frame = %+v", done)
	}
	if got := strings.Join(chunks, ""); got != "hello planet earth" || len(chunks) < 2 {
		t.Errorf("chunks = %q, want the echo streamed in pieces", chunks)
	}
	msgs, err := e.Store.ListMessages(t.Context(), done.ConversationID, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "hello planet earth" ||
		msgs[1].Role != "agent" || msgs[1].Text != "hello planet earth" || msgs[1].ID != done.MessageID {
		t.Errorf("stored = %+v, %v", msgs, err)
	}
	// The conversation is the page visitor's: it shows on their page.
	doc := v.Page("/chat/"+id+"?c="+done.ConversationID, http.StatusOK)
	if n := Testid(doc, "message").Length(); n != 2 {
		t.Errorf("page after a WebSocket turn shows %d messages, want 2", n)
	}

	// Malformed frames get an error frame; the socket stays usable.
	for _, bad := range []struct {
		kind int
		data string
	}{
		{websocket.TextMessage, "not json"},
		{websocket.TextMessage, `{"type":"subscribe"}`},
		{websocket.BinaryMessage, "\x00\x01"},
		// An approval frame must name the approval and its conversation.
		{websocket.TextMessage, `{"type":"approval","agent_id":"` + id + `","conversation_id":"` + done.ConversationID + `"}`},
		{websocket.TextMessage, `{"type":"approval","agent_id":"` + id + `","approval":{"id":"ap1","approve":true}}`},
	} {
		if err := c.WriteMessage(bad.kind, []byte(bad.data)); err != nil {
			t.Fatal(err)
		}
		f := ReadFrame(t, c)
		if f.Type != "error" || f.Code != "bad_frame" || f.Message == "" {
			t.Errorf("after %q: %+v", bad.data, f)
		}
		wantFate(t, f, false, false)
	}

	// Too long: refused, not stored.
	_, f := Turn(t, c, chatws.In{AgentID: id, ConversationID: done.ConversationID, Text: strings.Repeat("é", chat.MaxMessageBytes/2+1)})
	if f.Type != "error" || f.Code != "message_too_large" {
		t.Errorf("oversized message: %+v", f)
	}
	wantFate(t, f, false, false)
	// Unknown agent and someone else's conversation.
	_, f = Turn(t, c, chatws.In{AgentID: strings.Repeat("a", agent.IDLen), Text: "hi"})
	if f.Type != "error" || f.Code != "unknown_agent" {
		t.Errorf("unknown agent: %+v", f)
	}
	wantFate(t, f, false, false)
	w := e.Visitor()
	w.Page("/chat/"+id, http.StatusOK)
	_, f = Turn(t, w.MustDial(), chatws.In{AgentID: id, ConversationID: done.ConversationID, Text: "hijack"})
	if f.Type != "error" || f.Code != "unknown_conversation" {
		t.Errorf("foreign conversation: %+v", f)
	}
	wantFate(t, f, false, false)

	// Still usable: continue the conversation.
	chunks, f = Turn(t, c, chatws.In{AgentID: id, ConversationID: done.ConversationID, Text: "again"})
	if f.Type != "done" || f.ConversationID != done.ConversationID || strings.Join(chunks, "") != "again" {
		t.Errorf("continued turn: %q then %+v", chunks, f)
	}
	if f.Stored != nil || f.Sent != nil {
		t.Errorf("a done frame carries stored/sent: %+v", f)
	}
	if msgs, _ := e.Store.ListMessages(t.Context(), done.ConversationID, 10); len(msgs) != 4 {
		t.Errorf("%d messages stored, want 4 (refused ones are not)", len(msgs))
	}
}

func TestChatWebSocketHandshake(t *testing.T) {
	e := NewChat(t)
	_, v := onChatPage(t, e)

	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "null"} {
		c, resp, err := v.WSDial(origin)
		if err == nil {
			c.Close()
			t.Errorf("Origin %q: handshake accepted", origin)
			continue
		}
		if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %q: %v, response %v", origin, err, resp)
			continue
		}
		var body httpkit.ErrorBody
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error.Code != "bad_origin" {
			t.Errorf("Origin %q: body %+v, %v", origin, body, err)
		}
	}

	// No session (never opened a chat page): a clear 401, not a 500.
	_, resp, err := e.Visitor().WSDial(e.TS.URL)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a session: %v, %v, want 401", err, resp)
	}
}

// wantFate checks an error frame's account of the message: stored, sent.
func wantFate(t *testing.T, f chatws.Out, stored, sent bool) {
	t.Helper()
	if f.Stored == nil || f.Sent == nil {
		t.Errorf("error frame %s without stored/sent: %+v", f.Code, f)
		return
	}
	if *f.Stored != stored || *f.Sent != sent {
		t.Errorf("error frame %s: stored %v sent %v, want stored %v sent %v", f.Code, *f.Stored, *f.Sent, stored, sent)
	}
}

// TestChatWebSocketRateLimited: a message over the rate limit is refused
// before anything happens to it, and the frame says so.
func TestChatWebSocketRateLimited(t *testing.T) {
	e := NewChat(t)
	e.Server.ChatSocket.Rates = httpkit.NewRates(6) // burst 5
	id, v := onChatPage(t, e)
	c := v.MustDial()
	_, done := Turn(t, c, chatws.In{AgentID: id, Text: "first"})
	if done.Type != "done" {
		t.Fatalf("first turn: %+v", done)
	}
	for i := range 10 {
		_, f := Turn(t, c, chatws.In{AgentID: id, ConversationID: done.ConversationID, Text: fmt.Sprint("n", i)})
		if f.Type == "done" {
			continue
		}
		if f.Code != "rate_limited" {
			t.Fatalf("turn %d: %+v", i, f)
		}
		wantFate(t, f, false, false)
		msgs, err := e.Store.ListMessages(t.Context(), done.ConversationID, 100)
		if err != nil || len(msgs) != 2*(i+1) {
			t.Errorf("%d messages stored after %d turns and a refused one (%v)", len(msgs), i+1, err)
		}
		return
	}
	t.Fatal("never rate limited")
}

// TestChatWebSocketFailedAfterStoring: a turn that fails once the message
// is stored says so (stored), and whether the agent got it (sent); the
// conversation then holds the message, as the frame says.
func TestChatWebSocketFailedAfterStoring(t *testing.T) {
	for _, tt := range []struct {
		name     string
		answerer chat.Answerer // nil: chat is not available on this node
		code     string
		sent     bool
	}{
		{"backend down", FailingAnswerer{Err: agent.ErrBackendUnavailable}, "agent_unavailable", true},
		{"backend timed out", FailingAnswerer{Err: agent.ErrBackendTimeout}, "agent_timeout", true},
		{"address not allowed", FailingAnswerer{Err: agent.ErrBlockedAddress}, "agent_misconfigured", false},
		{"broke off after a chunk", FailingAnswerer{Chunk: "hal", Err: agent.ErrBlockedAddress}, "agent_misconfigured", true},
		{"agent gone from its host", FailingAnswerer{Err: agent.ErrUnknownAgent}, "unknown_agent", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := NewChat(t)
			id, v := onChatPage(t, e)
			c := v.MustDial()
			_, done := Turn(t, c, chatws.In{AgentID: id, Text: "first"})
			if done.Type != "done" {
				t.Fatalf("first turn: %+v", done)
			}
			// Safe to swap: the next frame we write orders this before the
			// server's read of it.
			e.Server.Chat.Local = tt.answerer
			_, f := Turn(t, c, chatws.In{AgentID: id, ConversationID: done.ConversationID, Text: "second"})
			if f.Type != "error" || f.Code != tt.code || f.ConversationID != done.ConversationID {
				t.Fatalf("frame %+v, want error %s in %s", f, tt.code, done.ConversationID)
			}
			wantFate(t, f, true, tt.sent)
			msgs, err := e.Store.ListMessages(t.Context(), done.ConversationID, 10)
			if err != nil || len(msgs) < 3 || msgs[2].Role != "user" || msgs[2].Text != "second" {
				t.Errorf("frame says stored; conversation holds %+v (%v)", msgs, err)
			}
		})
	}

	// No chat on this node: refused before the message is stored.
	{
		e := NewChat(t)
		e.Server.Chat.Local = nil
		id, v := onChatPage(t, e)
		_, f := Turn(t, v.MustDial(), chatws.In{AgentID: id, Text: "hello"})
		if f.Type != "error" || f.Code != "chat_unavailable" {
			t.Fatalf("no chat: frame %+v", f)
		}
		wantFate(t, f, false, false)
	}

	// A new conversation: the frame names the one the message went into.
	e := NewChat(t)
	e.Server.Chat.Local = FailingAnswerer{Err: agent.ErrBackendUnavailable}
	id, v := onChatPage(t, e)
	_, f := Turn(t, v.MustDial(), chatws.In{AgentID: id, Text: "hello"})
	wantFate(t, f, true, true)
	msgs, err := e.Store.ListMessages(t.Context(), f.ConversationID, 10)
	if f.ConversationID == "" || err != nil || len(msgs) != 2 || msgs[0].Text != "hello" || msgs[1].Role != "error" {
		t.Errorf("frame %+v; its conversation holds %+v (%v)", f, msgs, err)
	}
}
