package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/httpkit"

	"github.com/PuerkitoBio/goquery"
	"github.com/gorilla/websocket"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// newChatServer is a test server whose local agents answer with the real
// agent runtime, their backends looked up in the store.
func newChatServer(t *testing.T) *testEnv {
	t.Helper()
	e := newTestServer(t)
	rt := runtime.NewRuntime(func(ctx context.Context, id string) (agent.Backend, error) {
		b, err := e.st.GetBackend(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return agent.Backend{}, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, id)
		}
		return b, err
	}, runtime.RuntimeOptions{AllowPrivate: true, Timeout: 10 * time.Second})
	t.Cleanup(func() { _ = rt.Close() })
	e.s.Chat.Local = rt
	return e
}

// seedEcho registers a local agent with the echo builtin and returns its id.
func (e *testEnv) seedEcho(name, display string) string {
	e.t.Helper()
	return e.seedAgent("", simpleInput(name, display, "demo")).Record.ID
}

// chatMessages are the rendered messages of a chat page: role and text.
func chatMessages(doc *goquery.Document) [][2]string {
	var out [][2]string
	testid(doc, "message").Each(func(_ int, s *goquery.Selection) {
		out = append(out, [2]string{s.AttrOr("data-role", ""), s.Find(".msg-text").Text()})
	})
	return out
}

func TestChatPage(t *testing.T) {
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")

	v := e.visitor()
	resp := v.do(http.MethodGet, "/chat/"+id, nil)
	var session bool
	for _, c := range resp.Cookies() {
		session = session || c.Value != ""
	}
	if !session {
		t.Error("the chat page sets no session cookie for an anonymous visitor (the WebSocket needs one)")
	}
	doc := parsePage(t, resp, http.StatusOK)

	root := mustTestid(t, doc, "chat")
	if got := root.AttrOr("data-agent-id", ""); got != id {
		t.Errorf("data-agent-id = %q, want %q", got, id)
	}
	if got, ok := root.Attr("data-conversation-id"); !ok || got != "" {
		t.Errorf("data-conversation-id = %q, %v; want present and empty", got, ok)
	}
	if got := root.AttrOr("data-ws-path", ""); got != "/api/v1/chat" {
		t.Errorf("data-ws-path = %q", got)
	}
	if got := text(mustTestid(t, doc, "chat-agent-name")); got != "Echo Bot" {
		t.Errorf("agent name = %q", got)
	}
	if got := mustTestid(t, doc, "chat-agent-link").AttrOr("href", ""); got != "/agents/"+id {
		t.Errorf("agent link = %q", got)
	}
	if got := mustTestid(t, doc, "chat-agent-status").AttrOr("data-status", ""); got != store.StatusOnline {
		t.Errorf("agent status = %q", got)
	}
	if got := mustTestid(t, doc, "chat-agent-host").AttrOr("data-local", ""); got != "true" {
		t.Errorf("chat-agent-host data-local = %q", got)
	}
	if n := testid(doc, "chat-offline").Length(); n != 0 {
		t.Error("a local agent is shown as offline")
	}
	mustTestid(t, doc, "messages-empty")
	mustTestid(t, doc, "conversations-empty")
	if n := testid(doc, "message").Length(); n != 0 {
		t.Errorf("%d messages on a new conversation", n)
	}
	newConv := mustTestid(t, doc, "new-conversation")
	if newConv.AttrOr("href", "") != "/chat/"+id || newConv.AttrOr("aria-current", "") != "page" {
		t.Errorf("new conversation link = %q (aria-current %q)", newConv.AttrOr("href", ""), newConv.AttrOr("aria-current", ""))
	}

	form := mustTestid(t, doc, "composer")
	if form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/chat/"+id {
		t.Errorf("composer form: method %q action %q", form.AttrOr("method", ""), form.AttrOr("action", ""))
	}
	if form.Find(`textarea[name="text"]`).Length() != 1 || form.Find(`input[type="hidden"][name="c"]`).Length() != 1 {
		t.Error("composer lacks the text area or the conversation field")
	}
	if testid(doc, "composer-send").AttrOr("type", "") != "submit" {
		t.Error("the send button does not submit the form")
	}
	if _, hidden := mustTestid(t, doc, "composer-error").Attr("hidden"); !hidden {
		t.Error("an empty composer error is visible")
	}
	checkChatTemplates(t, doc, id)
	var script string
	doc.Find("script[src]").Each(func(_ int, s *goquery.Selection) {
		if src := s.AttrOr("src", ""); strings.HasPrefix(src, "/static/chat.") {
			script = src
		}
	})
	if script == "" {
		t.Fatal("the page does not load chat.js")
	}
	js := v.do(http.MethodGet, script, nil)
	wantStatus(t, js, http.StatusOK)
	if ct := js.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("chat.js Content-Type = %q", ct)
	}

	// The agent page links here.
	doc = v.page("/agents/"+id, http.StatusOK)
	if got := mustTestid(t, doc, "chat-agent").AttrOr("href", ""); got != "/chat/"+id {
		t.Errorf("agent page chat link = %q", got)
	}
}

// checkChatTemplates checks the <template>s chat.js clones: one of each,
// inside the chat root (the script looks there), each the server's own
// markup for what it stands for.
func checkChatTemplates(t *testing.T, doc *goquery.Document, agentID string) {
	t.Helper()
	root := mustTestid(t, doc, "chat")
	if n, m := doc.Find(`[data-testid="chat-template"]`).Length(), root.Find(`template[data-testid="chat-template"]`).Length(); n != 7 || m != n {
		t.Errorf("%d chat templates, %d of them <template>s in the chat root; want 7", n, m)
	}
	tmpl := func(name string) *goquery.Selection {
		t.Helper()
		s := root.Find(fmt.Sprintf(`template[data-template=%q]`, name))
		if s.Length() != 1 || s.AttrOr("data-testid", "") != "chat-template" {
			t.Errorf("template %q: %d found", name, s.Length())
		}
		return s.Children()
	}
	for _, tt := range []struct{ name, role, label string }{
		{"user", "user", ""},
		{"agent", "agent", ""},
		{"error-unsent", "error", "Not sent: your message was not saved."},
		{"error-undelivered", "error", "Saved, but not delivered to the agent:"},
		{"error-unanswered", "error", "Saved, but the agent could not answer:"},
		{"error-unknown", "error", "Not answered:"},
	} {
		m := tmpl(tt.name)
		if m.Length() != 1 || m.AttrOr("data-testid", "") != "message" || m.AttrOr("data-role", "") != tt.role || m.Find(".msg-text").Length() != 1 {
			h, _ := goquery.OuterHtml(m)
			t.Errorf("template %q is not a %s message: %s", tt.name, tt.role, h)
		}
		if got := text(m.Find(".msg-label")); got != tt.label {
			t.Errorf("template %q label = %q, want %q", tt.name, got, tt.label)
		}
		if retry := m.Find(`button[type="button"][data-testid="message-retry"]`).Length(); retry != 0 != (tt.role == "error") {
			t.Errorf("template %q has %d retry buttons", tt.name, retry)
		}
		if typing := m.Find(`[data-testid="typing"]`).Length(); typing != 0 != (tt.name == "agent") {
			t.Errorf("template %q has %d typing indicators", tt.name, typing)
		}
	}
	if got := tmpl("agent").Find(`[data-testid="typing"]`).AttrOr("aria-label", ""); got != "Echo Bot is typing" {
		t.Errorf("typing indicator label = %q", got)
	}
	conv := tmpl("conversation")
	if conv.AttrOr("data-testid", "") != "conversation" || conv.AttrOr("data-agent-id", "") != agentID || conv.AttrOr("data-current", "") != "true" ||
		conv.Find(`a.conv-link[aria-current="page"] .conv-title`).Length() != 1 || conv.Find("time").Length() != 1 {
		h, _ := goquery.OuterHtml(conv)
		t.Errorf("conversation template: %s", h)
	}
	if got := text(conv.Find(".conv-agent")); got != "Echo Bot" {
		t.Errorf("conversation template agent = %q", got)
	}
}

func TestChatPageMissing(t *testing.T) {
	e := newChatServer(t)
	gone := e.seedAgent("", simpleInput("doomed", "Doomed"))
	if err := e.s.Registry.Delete(t.Context(), registry.Operator, gone.Record.ID); err != nil {
		t.Fatal(err)
	}
	unknown := strings.Repeat("a", agent.IDLen)
	for _, tt := range []struct{ name, path string }{
		{"unknown id", "/chat/" + unknown},
		{"deleted agent", "/chat/" + gone.Record.ID},
		{"malformed id", "/chat/not-an-id"},
		{"upper-case id", "/chat/" + strings.ToUpper(unknown)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := e.page(tt.path, http.StatusNotFound)
			if got := mustTestid(t, doc, "error-page").AttrOr("data-status", ""); got != "404" {
				t.Errorf("error page status = %q", got)
			}
		})
	}
	resp := e.postForm("/chat/"+unknown, url.Values{"text": {"hello"}})
	doc := parsePage(t, resp, http.StatusNotFound)
	mustTestid(t, doc, "error-page")
}

// TestChatForm is the composer without JavaScript: a POST runs one turn
// and redirects back to the conversation.
func TestChatForm(t *testing.T) {
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")
	alice := e.visitor()
	alice.page("/chat/"+id, http.StatusOK)

	resp := alice.postForm("/chat/"+id, url.Values{"text": {"  hello  there  "}, "c": {""}})
	wantStatus(t, resp, http.StatusSeeOther)
	loc := location(t, resp)
	u, err := url.Parse(loc)
	if err != nil || u.Path != "/chat/"+id || u.Query().Get("c") == "" {
		t.Fatalf("redirect to %q", loc)
	}
	conv := u.Query().Get("c")

	doc := alice.page(loc, http.StatusOK)
	if got := mustTestid(t, doc, "chat").AttrOr("data-conversation-id", ""); got != conv {
		t.Errorf("data-conversation-id = %q, want %q", got, conv)
	}
	if got, _ := inputValue(doc, "c"); got != conv {
		t.Errorf("composer c = %q, want %q", got, conv)
	}
	want := [][2]string{{"user", "hello  there"}, {"agent", "hello  there"}}
	if got := chatMessages(doc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages = %q, want %q", got, want)
	}
	if n := testid(doc, "messages-empty").Length(); n != 0 {
		t.Error("the empty state is shown next to messages")
	}
	item := mustTestid(t, doc, "conversation")
	if item.Length() != 1 || item.AttrOr("data-conversation-id", "") != conv || item.AttrOr("data-current", "") != "true" {
		t.Errorf("side list item: %d items, id %q, current %q", item.Length(), item.AttrOr("data-conversation-id", ""), item.AttrOr("data-current", ""))
	}
	if got := item.Find("a").AttrOr("href", ""); got != "/chat/"+id+"?c="+conv {
		t.Errorf("side list link = %q", got)
	}
	if got := text(item.Find(".conv-title")); got != "hello there" {
		t.Errorf("conversation title = %q", got)
	}
	if mustTestid(t, doc, "new-conversation").AttrOr("aria-current", "") != "" {
		t.Error("new conversation is marked current on an existing one")
	}

	// The next message continues the conversation.
	resp = alice.postForm("/chat/"+id, url.Values{"text": {"second"}, "c": {conv}})
	wantStatus(t, resp, http.StatusSeeOther)
	if got := location(t, resp); got != loc {
		t.Errorf("second redirect = %q, want %q", got, loc)
	}
	msgs, err := e.st.ListMessages(t.Context(), conv, 10)
	if err != nil || len(msgs) != 4 || msgs[2].Text != "second" || msgs[3].Role != "agent" {
		t.Errorf("stored messages = %+v, %v", msgs, err)
	}

	// Refused sends come back in the composer, text kept.
	big := strings.Repeat("x", chat.MaxMessageBytes+1)
	for _, tt := range []struct {
		name, text string
		status     int
	}{
		{"empty", "   ", http.StatusBadRequest},
		{"too large", big, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := alice.postForm("/chat/"+id, url.Values{"text": {tt.text}, "c": {conv}})
			doc := parsePage(t, resp, tt.status)
			errEl := mustTestid(t, doc, "composer-error")
			if _, hidden := errEl.Attr("hidden"); hidden || text(errEl) == "" {
				t.Errorf("composer error hidden=%v text %q", hidden, text(errEl))
			}
			if got := mustTestid(t, doc, "composer-input").Text(); got != tt.text {
				t.Errorf("draft kept = %.40q…, want %.40q…", got, tt.text)
			}
			if got := mustTestid(t, doc, "chat").AttrOr("data-conversation-id", ""); got != conv {
				t.Errorf("conversation lost on a refused send: %q", got)
			}
		})
	}
	if msgs, _ := e.st.ListMessages(t.Context(), conv, 10); len(msgs) != 4 {
		t.Errorf("a refused send was stored: %d messages", len(msgs))
	}

	// Another visitor cannot post into it, or cross-site.
	bob := e.visitor()
	resp = bob.postForm("/chat/"+id, url.Values{"text": {"hijack"}, "c": {conv}})
	parsePage(t, resp, http.StatusNotFound)
	resp = alice.do(http.MethodPost, "/chat/"+id, "text=x", "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	wantStatus(t, resp, http.StatusForbidden)
	if msgs, _ := e.st.ListMessages(t.Context(), conv, 10); len(msgs) != 4 {
		t.Errorf("a foreign post was stored: %d messages", len(msgs))
	}
}

func TestChatConversationAccess(t *testing.T) {
	e := newChatServer(t)
	echo := e.seedEcho("echo-bot", "Echo Bot")
	other := e.seedEcho("other-bot", "Other Bot")

	alice := e.visitor()
	alice.page("/chat/"+echo, http.StatusOK)
	resp := alice.postForm("/chat/"+echo, url.Values{"text": {"mine"}})
	wantStatus(t, resp, http.StatusSeeOther)
	conv, _ := url.Parse(location(t, resp))
	c := conv.Query().Get("c")

	bob := e.visitor()
	bob.page("/chat/"+echo, http.StatusOK)
	for _, tt := range []struct {
		name string
		env  *testEnv
		path string
	}{
		{"someone else's", bob, "/chat/" + echo + "?c=" + c},
		{"without a session", e.visitor(), "/chat/" + echo + "?c=" + c},
		{"another agent's page", alice, "/chat/" + other + "?c=" + c},
		{"unknown", alice, "/chat/" + echo + "?c=cnosuchconversation"},
		{"absurdly long", alice, "/chat/" + echo + "?c=" + strings.Repeat("c", 500)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.env.page(tt.path, http.StatusNotFound)
			mustTestid(t, doc, "error-page")
			if strings.Contains(doc.Text(), "mine") {
				t.Error("the 404 page shows the conversation")
			}
		})
	}
	// Bob's side list does not show Alice's conversation.
	doc := bob.page("/chat/"+echo, http.StatusOK)
	if n := testid(doc, "conversation").Length(); n != 0 {
		t.Errorf("bob sees %d conversations", n)
	}
	// Alice's own page shows it.
	alice.page("/chat/"+echo+"?c="+c, http.StatusOK)
}

// TestChatHistory renders stored conversations: every role, text escaped
// and kept as typed, the side list across agents.
func TestChatHistory(t *testing.T) {
	e := newChatServer(t)
	echo := e.seedEcho("echo-bot", "Echo Bot")
	other := e.seedEcho("other-bot", "Other Bot")
	e.signup("carol", "password-carol-1")
	u, err := e.st.GetUserByHandle(t.Context(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	owner := "user:" + strconv.FormatInt(u.ID, 10)
	ctx := t.Context()
	base := time.Now().Add(-time.Hour).UTC()
	mk := func(id, agentID, title string, at time.Time) {
		t.Helper()
		if _, err := e.st.CreateConversation(ctx, store.Conversation{ID: id, AgentID: agentID, OwnerKey: owner, Title: title, CreatedAt: at, UpdatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	mk("cfirst", echo, "<b>first</b>", base)
	mk("csecond", other, "second", base.Add(time.Minute))
	hostile := "<script>alert(1)</script>\n  two spaces & <i>tags</i>"
	want := [][2]string{
		{"user", hostile},
		{"agent", "line one\nline two"},
		{"user", "again"},
		{"error", "The agent could not answer right now. Try again later."},
	}
	for i, m := range want {
		if _, err := e.st.AppendMessage(ctx, store.Message{ConversationID: "cfirst", Role: m[0], Text: m[1], CreatedAt: base.Add(2*time.Minute + time.Duration(i)*time.Second)}); err != nil {
			t.Fatal(err)
		}
	}

	resp := e.do(http.MethodGet, "/chat/"+echo+"?c=cfirst", nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "<script>alert") || strings.Contains(string(body), "<i>tags") || strings.Contains(string(body), "<b>first") {
		t.Error("message or title text is not escaped")
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	checkCSPClean(t, doc)
	checkChatTemplates(t, doc, echo)
	if got := chatMessages(doc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages = %q\nwant %q", got, want)
	}
	errMsg := testid(doc, "message").Last()
	if !errMsg.HasClass("msg-error") || errMsg.Find(".msg-label").Length() != 1 {
		t.Error("an error message is not styled as an inline error")
	}
	testid(doc, "message").Each(func(_ int, s *goquery.Selection) {
		if _, ok := s.Attr("data-message-id"); !ok {
			t.Error("a stored message has no data-message-id")
		}
	})

	// Side list: both conversations, latest first, each linking to its
	// own agent's page; the open one is current.
	items := mustTestid(t, doc, "conversation")
	if items.Length() != 2 {
		t.Fatalf("%d conversations listed", items.Length())
	}
	for i, w := range []struct{ id, agent, name, current string }{
		{"cfirst", echo, "Echo Bot", "true"}, // bumped by its messages
		{"csecond", other, "Other Bot", "false"},
	} {
		it := items.Eq(i)
		if it.AttrOr("data-conversation-id", "") != w.id || it.AttrOr("data-current", "") != w.current {
			t.Errorf("item %d = %q current %q, want %q %q", i, it.AttrOr("data-conversation-id", ""), it.AttrOr("data-current", ""), w.id, w.current)
		}
		if got := it.Find("a").AttrOr("href", ""); got != "/chat/"+w.agent+"?c="+w.id {
			t.Errorf("item %d href = %q", i, got)
		}
		if got := text(it.Find(".conv-agent")); got != w.name {
			t.Errorf("item %d agent = %q, want %q", i, got, w.name)
		}
	}
	if got := text(items.Eq(0).Find(".conv-title")); got != "<b>first</b>" {
		t.Errorf("title = %q", got)
	}
}

// ---------- WebSocket ----------

// wsDial opens the chat WebSocket with env's cookies (visit a chat page
// first) and an Origin header.
func (e *testEnv) wsDial(origin string) (*websocket.Conn, *http.Response, error) {
	e.t.Helper()
	d := websocket.Dialer{Jar: e.client.Jar, HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, resp, err := d.DialContext(e.t.Context(), "ws"+strings.TrimPrefix(e.ts.URL, "http")+"/api/v1/chat", h)
	if c != nil {
		e.t.Cleanup(func() { _ = c.Close() })
	}
	return c, resp, err
}

func (e *testEnv) mustDial() *websocket.Conn {
	e.t.Helper()
	c, resp, err := e.wsDial(e.ts.URL)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial chat: %v (status %d)", err, status)
	}
	return c
}

func readFrame(t *testing.T, c *websocket.Conn) wsOut {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var f wsOut
	if err := c.ReadJSON(&f); err != nil {
		t.Fatalf("read frame: %v", err)
	}
	return f
}

// turn sends a message and collects the streamed reply up to the final
// done or error frame.
func turn(t *testing.T, c *websocket.Conn, in wsIn) (chunks []string, last wsOut) {
	t.Helper()
	in.Type = "message"
	if err := c.WriteJSON(in); err != nil {
		t.Fatal(err)
	}
	for {
		f := readFrame(t, c)
		if f.Type != "chunk" {
			return chunks, f
		}
		chunks = append(chunks, f.Text)
	}
}

func TestChatWebSocket(t *testing.T) {
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")
	v := e.visitor()
	v.page("/chat/"+id, http.StatusOK)
	c := v.mustDial()

	// A whole turn: chunks, then done; both messages stored.
	chunks, done := turn(t, c, wsIn{AgentID: id, Text: "hello planet earth"})
	if done.Type != "done" || done.ConversationID == "" || done.MessageID == 0 {
		t.Fatalf("final frame = %+v", done)
	}
	if got := strings.Join(chunks, ""); got != "hello planet earth" || len(chunks) < 2 {
		t.Errorf("chunks = %q, want the echo streamed in pieces", chunks)
	}
	msgs, err := e.st.ListMessages(t.Context(), done.ConversationID, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].Text != "hello planet earth" ||
		msgs[1].Role != "agent" || msgs[1].Text != "hello planet earth" || msgs[1].ID != done.MessageID {
		t.Errorf("stored = %+v, %v", msgs, err)
	}
	// The conversation is the page visitor's: it shows on their page.
	doc := v.page("/chat/"+id+"?c="+done.ConversationID, http.StatusOK)
	if got := chatMessages(doc); len(got) != 2 {
		t.Errorf("page after a WebSocket turn shows %q", got)
	}

	// Malformed frames get an error frame; the socket stays usable.
	for _, bad := range []struct {
		kind int
		data string
	}{
		{websocket.TextMessage, "not json"},
		{websocket.TextMessage, `{"type":"subscribe"}`},
		{websocket.BinaryMessage, "\x00\x01"},
	} {
		if err := c.WriteMessage(bad.kind, []byte(bad.data)); err != nil {
			t.Fatal(err)
		}
		f := readFrame(t, c)
		if f.Type != "error" || f.Code != "bad_frame" || f.Message == "" {
			t.Errorf("after %q: %+v", bad.data, f)
		}
		wantFate(t, f, false, false)
	}

	// Too long: refused, not stored.
	_, f := turn(t, c, wsIn{AgentID: id, ConversationID: done.ConversationID, Text: strings.Repeat("é", chat.MaxMessageBytes/2+1)})
	if f.Type != "error" || f.Code != "message_too_large" {
		t.Errorf("oversized message: %+v", f)
	}
	wantFate(t, f, false, false)
	// Unknown agent and someone else's conversation.
	_, f = turn(t, c, wsIn{AgentID: strings.Repeat("a", agent.IDLen), Text: "hi"})
	if f.Type != "error" || f.Code != "unknown_agent" {
		t.Errorf("unknown agent: %+v", f)
	}
	wantFate(t, f, false, false)
	w := e.visitor()
	w.page("/chat/"+id, http.StatusOK)
	_, f = turn(t, w.mustDial(), wsIn{AgentID: id, ConversationID: done.ConversationID, Text: "hijack"})
	if f.Type != "error" || f.Code != "unknown_conversation" {
		t.Errorf("foreign conversation: %+v", f)
	}
	wantFate(t, f, false, false)

	// Still usable: continue the conversation.
	chunks, f = turn(t, c, wsIn{AgentID: id, ConversationID: done.ConversationID, Text: "again"})
	if f.Type != "done" || f.ConversationID != done.ConversationID || strings.Join(chunks, "") != "again" {
		t.Errorf("continued turn: %q then %+v", chunks, f)
	}
	if f.Stored != nil || f.Sent != nil {
		t.Errorf("a done frame carries stored/sent: %+v", f)
	}
	if msgs, _ := e.st.ListMessages(t.Context(), done.ConversationID, 10); len(msgs) != 4 {
		t.Errorf("%d messages stored, want 4 (refused ones are not)", len(msgs))
	}
}

func TestChatWebSocketHandshake(t *testing.T) {
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")
	v := e.visitor()
	v.page("/chat/"+id, http.StatusOK)

	for _, origin := range []string{"https://evil.example", "http://localhost.evil.example", "null"} {
		c, resp, err := v.wsDial(origin)
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
	_, resp, err := e.visitor().wsDial(e.ts.URL)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without a session: %v, %v, want 401", err, resp)
	}
}

// wantFate checks an error frame's account of the message: stored, sent.
func wantFate(t *testing.T, f wsOut, stored, sent bool) {
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
	e := newChatServer(t)
	e.s.chatLimits = httpkit.NewRates(6) // burst 5
	id := e.seedEcho("echo-bot", "Echo Bot")
	v := e.visitor()
	v.page("/chat/"+id, http.StatusOK)
	c := v.mustDial()
	_, done := turn(t, c, wsIn{AgentID: id, Text: "first"})
	if done.Type != "done" {
		t.Fatalf("first turn: %+v", done)
	}
	for i := range 10 {
		_, f := turn(t, c, wsIn{AgentID: id, ConversationID: done.ConversationID, Text: fmt.Sprint("n", i)})
		if f.Type == "done" {
			continue
		}
		if f.Code != "rate_limited" {
			t.Fatalf("turn %d: %+v", i, f)
		}
		wantFate(t, f, false, false)
		msgs, err := e.st.ListMessages(t.Context(), done.ConversationID, 100)
		if err != nil || len(msgs) != 2*(i+1) {
			t.Errorf("%d messages stored after %d turns and a refused one (%v)", len(msgs), i+1, err)
		}
		return
	}
	t.Fatal("never rate limited")
}

// failingAnswerer streams chunk (if any), then fails with err.
type failingAnswerer struct {
	chunk string
	err   error
}

func (f failingAnswerer) Answer(_ context.Context, _ agent.Turn, emit func(string) error) (string, error) {
	if f.chunk != "" {
		if err := emit(f.chunk); err != nil {
			return "", err
		}
	}
	return f.chunk, f.err
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
		{"backend down", failingAnswerer{err: agent.ErrBackendUnavailable}, "agent_unavailable", true},
		{"backend timed out", failingAnswerer{err: agent.ErrBackendTimeout}, "agent_timeout", true},
		{"address not allowed", failingAnswerer{err: agent.ErrBlockedAddress}, "agent_misconfigured", false},
		{"broke off after a chunk", failingAnswerer{chunk: "hal", err: agent.ErrBlockedAddress}, "agent_misconfigured", true},
		{"agent gone from its host", failingAnswerer{err: agent.ErrUnknownAgent}, "unknown_agent", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newChatServer(t)
			id := e.seedEcho("echo-bot", "Echo Bot")
			v := e.visitor()
			v.page("/chat/"+id, http.StatusOK)
			c := v.mustDial()
			_, done := turn(t, c, wsIn{AgentID: id, Text: "first"})
			if done.Type != "done" {
				t.Fatalf("first turn: %+v", done)
			}
			// Safe to swap: the next frame we write orders this before the
			// server's read of it.
			e.s.Chat.Local = tt.answerer
			_, f := turn(t, c, wsIn{AgentID: id, ConversationID: done.ConversationID, Text: "second"})
			if f.Type != "error" || f.Code != tt.code || f.ConversationID != done.ConversationID {
				t.Fatalf("frame %+v, want error %s in %s", f, tt.code, done.ConversationID)
			}
			wantFate(t, f, true, tt.sent)
			msgs, err := e.st.ListMessages(t.Context(), done.ConversationID, 10)
			if err != nil || len(msgs) < 3 || msgs[2].Role != "user" || msgs[2].Text != "second" {
				t.Errorf("frame says stored; conversation holds %+v (%v)", msgs, err)
			}
		})
	}

	// No chat on this node: refused before the message is stored.
	{
		e := newChatServer(t)
		id := e.seedEcho("echo-bot", "Echo Bot")
		e.s.Chat.Local = nil
		v := e.visitor()
		v.page("/chat/"+id, http.StatusOK)
		_, f := turn(t, v.mustDial(), wsIn{AgentID: id, Text: "hello"})
		if f.Type != "error" || f.Code != "chat_unavailable" {
			t.Fatalf("no chat: frame %+v", f)
		}
		wantFate(t, f, false, false)
	}

	// A new conversation: the frame names the one the message went into.
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")
	e.s.Chat.Local = failingAnswerer{err: agent.ErrBackendUnavailable}
	v := e.visitor()
	v.page("/chat/"+id, http.StatusOK)
	_, f := turn(t, v.mustDial(), wsIn{AgentID: id, Text: "hello"})
	wantFate(t, f, true, true)
	msgs, err := e.st.ListMessages(t.Context(), f.ConversationID, 10)
	if f.ConversationID == "" || err != nil || len(msgs) != 2 || msgs[0].Text != "hello" || msgs[1].Role != "error" {
		t.Errorf("frame %+v; its conversation holds %+v (%v)", f, msgs, err)
	}
}
