package chatws_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/chatws"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// TestChatSocketsCappedPerClient: one client may hold MaxSocketsPerClient
// chat sockets; the next gets a clear 429, and a closed one frees a slot.
func TestChatSocketsCappedPerClient(t *testing.T) {
	e := NewChat(t)
	_, v := onChatPage(t, e)
	max := e.Server.Config.MaxSocketsPerClient
	var first interface{ Close() error }
	for i := range max {
		c := v.MustDial()
		if i == 0 {
			first = c
		}
	}
	_, resp, err := v.WSDial(e.TS.URL)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("socket %d: err %v, resp %v; want 429", max+1, err, resp)
	}
	if resp.Header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if body := Decode[httpkit.ErrorBody](t, resp); body.Error.Code != chatws.CodeTooManySockets {
		t.Errorf("code %q, want too_many_sockets", body.Error.Code)
	}
	_ = first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, _, err := v.WSDial(e.TS.URL)
		if err == nil {
			_ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot after closing a socket: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestChatWebSocketBehindProxy: behind a reverse proxy that rewrites Host,
// the chat page's own origin is the public URL's; the handshake follows
// the node's one Origin rule, as forms and the API do, and accepts it.
// (A second rule of its own compared Origin with Host only, so chat over
// WebSocket failed behind such a proxy while every form worked.)
func TestChatWebSocketBehindProxy(t *testing.T) {
	const public = "https://agents.example.org"
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.PublicURL = public })
	UseRuntime(e)
	id, v := onChatPage(t, e)

	c, resp, err := v.WSDial(public)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("Origin %s (the public URL): %v, status %d; want the socket", public, err, status)
	}
	if _, f := Turn(t, c, chatws.In{AgentID: id, Text: "hello"}); f.Type != chatws.TypeDone {
		t.Errorf("turn over the proxied socket: %+v", f)
	}
	for _, origin := range []string{"https://evil.example", "https://agents.example.org.evil.example"} {
		if c, resp, err := v.WSDial(origin); err == nil {
			c.Close()
			t.Errorf("Origin %q: handshake accepted", origin)
		} else if resp == nil || resp.StatusCode != http.StatusForbidden {
			t.Errorf("Origin %q: %v, want 403", origin, err)
		}
	}
}

// TestChatAddressCeiling: anonymous visitors behind one address each run
// their turns on their own session's budget, but together they stay
// under the address's ceiling of turns in flight (AnonTurnsPerAddress):
// sessions fetched one after another from one address do not add up
// to more. Before, a socket's turns were bounded per session only.
func TestChatAddressCeiling(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.AnonTurnsPerAddress = 2 })
	UseRuntime(e)
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	id, first := onChatPage(t, e)
	var conns []*websocket.Conn
	for i := range 3 {
		v := first
		if i > 0 {
			v = e.Visitor()
			v.Page("/chat/"+id, http.StatusOK)
		}
		c := v.MustDial()
		conns = append(conns, c)
		sendFrame(t, c, chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: fmt.Sprint("visitor ", i)})
		f := ReadFrame(t, c)
		switch {
		case i < 2 && f.Type == chatws.TypeError:
			t.Fatalf("visitor %d under the ceiling refused: %+v", i, f)
		case i == 2 && (f.Type != chatws.TypeError || f.Code != "rate_limited"):
			t.Fatalf("visitor %d over the address's ceiling: %+v, want a rate_limited error", i, f)
		}
	}
	// A turn that ends gives its slot back.
	slow.Release()
	for f := ReadFrame(t, conns[0]); f.Type != chatws.TypeDone; f = ReadFrame(t, conns[0]) {
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.Server.ChatSocket.Anon.Held("127.0.0.1") != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d turns held after one ended, want 1", e.Server.ChatSocket.Anon.Held("127.0.0.1"))
		}
		time.Sleep(5 * time.Millisecond)
	}
	sendFrame(t, conns[2], chatws.In{Type: chatws.TypeMessage, AgentID: id, Text: "again"})
	if f := ReadFrame(t, conns[2]); f.Type == chatws.TypeError {
		t.Fatalf("refused with a slot free: %+v", f)
	}
	slow.Release()
	slow.Release()
}
