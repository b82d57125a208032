package chatws_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/chatws"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// send writes a frame, failing t.
func sendFrame(t *testing.T, c *websocket.Conn, in chatws.In) {
	t.Helper()
	if err := c.WriteJSON(in); err != nil {
		t.Fatal(err)
	}
}

// expect reads the next frame and checks its type.
func expect(t *testing.T, c *websocket.Conn, typ string) chatws.Out {
	t.Helper()
	f := ReadFrame(t, c)
	if f.Type != typ {
		t.Fatalf("frame %+v, want type %s", f, typ)
	}
	return f
}

func storedLines(t *testing.T, e *Env, conv string) string {
	t.Helper()
	ms, err := e.Store.ListMessages(t.Context(), conv, 50)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, m := range ms {
		out += fmt.Sprintf("%s: %s | ", m.Role, m.Text)
	}
	return out
}

// TestChatWebSocketTurnOutlivesSocket: the message is stored and
// announced (started) before the agent answers; the turn goes on when its
// socket closes; another socket attaches to it (the text so far, then the
// rest) and the reply is stored whole.
func TestChatWebSocketTurnOutlivesSocket(t *testing.T) {
	e := NewChat(t)
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	id, v := onChatPage(t, e)

	c1 := v.MustDial()
	sendFrame(t, c1, chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: "tell me"})
	started := expect(t, c1, chatws.TypeStarted)
	conv := started.ConversationID
	if conv == "" || started.Text != "tell me" {
		t.Fatalf("started frame %+v", started)
	}
	if f := expect(t, c1, chatws.TypeChunk); f.Text != SlowFirst {
		t.Errorf("first chunk %q", f.Text)
	}
	_ = c1.Close() // the page goes away mid-reply

	c2 := v.MustDial()
	sendFrame(t, c2, chatws.In{Type: chatws.TypeAttach, ConversationID: conv})
	if f := expect(t, c2, chatws.TypeAttached); f.Text != SlowFirst || f.ConversationID != conv {
		t.Errorf("attached frame %+v, want the text so far", f)
	}
	// Someone else's attach finds nothing.
	other := e.Visitor()
	other.Page("/chat/"+id, 200)
	oc := other.MustDial()
	sendFrame(t, oc, chatws.In{Type: chatws.TypeAttach, ConversationID: conv})
	expect(t, oc, chatws.TypeIdle)

	slow.Release()
	if f := expect(t, c2, chatws.TypeChunk); f.Text != "tell me" {
		t.Errorf("chunk after attach %q", f.Text)
	}
	done := expect(t, c2, chatws.TypeDone)
	if done.Text != SlowFirst+"tell me" || done.ConversationID != conv || done.HTML == "" {
		t.Errorf("done frame %+v", done)
	}
	if got, want := storedLines(t, e, conv), "user: tell me | agent: "+SlowFirst+"tell me | "; got != want {
		t.Errorf("stored %q, want %q", got, want)
	}
	sendFrame(t, c2, chatws.In{Type: chatws.TypeAttach, ConversationID: conv})
	expect(t, c2, chatws.TypeIdle)
	if n := e.Server.Live.Len(); n != 0 {
		t.Errorf("%d turns kept after the end", n)
	}
}

// TestChatWebSocketStopRetryEdit: a second message while a reply is on
// its way is refused (reply_pending); stop cancels the backend's context
// and the turn ends stopped, stored with its partial reply; retry sends
// the message again in place of the stopped exchange; edit replaces it.
func TestChatWebSocketStopRetryEdit(t *testing.T) {
	e := NewChat(t)
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	id, v := onChatPage(t, e)
	c := v.MustDial()

	sendFrame(t, c, chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: "first"})
	conv := expect(t, c, chatws.TypeStarted).ConversationID
	expect(t, c, chatws.TypeChunk)
	slow.Release()
	expect(t, c, chatws.TypeChunk)
	expect(t, c, chatws.TypeDone)

	sendFrame(t, c, chatws.In{Type: chatws.TypeMessage, AgentID: id, ConversationID: conv, Text: "second"})
	expect(t, c, chatws.TypeStarted)
	expect(t, c, chatws.TypeChunk)
	sendFrame(t, c, chatws.In{Type: chatws.TypeMessage, AgentID: id, ConversationID: conv, Text: "impatient"})
	if f := expect(t, c, chatws.TypeError); f.Code != "reply_pending" || *f.Stored {
		t.Errorf("message during a reply: %+v", f)
	}
	sendFrame(t, c, chatws.In{Type: chatws.TypeStop, ConversationID: conv})
	f := expect(t, c, chatws.TypeError)
	if f.Code != "stopped" || f.Stored == nil || !*f.Stored || !*f.Sent || f.ConversationID != conv {
		t.Errorf("stopped turn's frame %+v", f)
	}
	select {
	case err := <-slow.Canceled():
		if !errors.Is(err, context.Canceled) {
			t.Errorf("backend context ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's context did not end after stop")
	}
	want := "user: first | agent: " + SlowFirst + "first | user: second | agent: " + SlowFirst + " | error: " + chat.ErrStopped.Message + " | "
	if got := storedLines(t, e, conv); got != want {
		t.Errorf("stored after stop %q\nwant %q", got, want)
	}

	// Retry: the stopped exchange is replaced.
	slow.Release()
	chunks, done := Turn(t, c, chatws.In{Type: chatws.TypeRetry, AgentID: id, ConversationID: conv})
	if done.Type != chatws.TypeDone || done.Text != SlowFirst+"second" || len(chunks) != 2 {
		t.Fatalf("retry: %q, %+v", chunks, done)
	}
	want = "user: first | agent: " + SlowFirst + "first | user: second | agent: " + SlowFirst + "second | "
	if got := storedLines(t, e, conv); got != want {
		t.Errorf("stored after retry %q\nwant %q", got, want)
	}

	// Edit: the last message and its reply are replaced.
	slow.Release()
	if _, done := Turn(t, c, chatws.In{Type: chatws.TypeEdit, AgentID: id, ConversationID: conv, Text: "second, edited"}); done.Type != chatws.TypeDone {
		t.Fatalf("edit: %+v", done)
	}
	want = "user: first | agent: " + SlowFirst + "first | user: second, edited | agent: " + SlowFirst + "second, edited | "
	if got := storedLines(t, e, conv); got != want {
		t.Errorf("stored after edit %q\nwant %q", got, want)
	}

	// Stop without a conversation stops this socket's latest turn (the
	// started frame may not have come yet).
	sendFrame(t, c, chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: "new one"})
	expect(t, c, chatws.TypeStarted)
	expect(t, c, chatws.TypeChunk)
	sendFrame(t, c, chatws.In{Type: chatws.TypeStop})
	if f := expect(t, c, chatws.TypeError); f.Code != "stopped" {
		t.Errorf("stop without a conversation: %+v", f)
	}
}

// TestChatWebSocketListeningBounded: one socket listens to at most 8
// turns at once; past that, a frame that would add one is refused (busy)
// and stop still works.
func TestChatWebSocketListeningBounded(t *testing.T) {
	e := NewChat(t)
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	id, v := onChatPage(t, e)
	c := v.MustDial()
	sendFrame(t, c, chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: "wait"})
	conv := expect(t, c, chatws.TypeStarted).ConversationID
	expect(t, c, chatws.TypeChunk)
	for range 7 {
		sendFrame(t, c, chatws.In{Type: chatws.TypeAttach, ConversationID: conv})
		expect(t, c, chatws.TypeAttached)
	}
	sendFrame(t, c, chatws.In{Type: chatws.TypeAttach, ConversationID: conv})
	if f := expect(t, c, chatws.TypeError); f.Code != chatws.CodeBusy {
		t.Errorf("ninth listener: %+v", f)
	}
	sendFrame(t, c, chatws.In{Type: chatws.TypeStop, ConversationID: conv})
	for range 8 { // each listener hears the end
		if f := expect(t, c, chatws.TypeError); f.Code != "stopped" {
			t.Fatalf("end frame %+v", f)
		}
	}
	slow.Release() // a fresh turn is free to go again
	if _, f := Turn(t, c, chatws.In{AgentID: id, ConversationID: conv, Text: "again"}); f.Type != chatws.TypeDone {
		t.Errorf("turn after the listeners ended: %+v", f)
	}
}
