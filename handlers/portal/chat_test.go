package portal_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

func TestChatPage(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")

	v := e.Visitor()
	resp := v.Do(http.MethodGet, "/chat/"+id, nil)
	var session bool
	for _, c := range resp.Cookies() {
		session = session || c.Value != ""
	}
	if !session {
		t.Error("the chat page sets no session cookie for an anonymous visitor (the WebSocket needs one)")
	}
	doc := ParsePage(t, resp, http.StatusOK)

	root := MustTestid(t, doc, "chat")
	if got := root.AttrOr("data-agent-id", ""); got != id {
		t.Errorf("data-agent-id = %q, want %q", got, id)
	}
	if got, ok := root.Attr("data-conversation-id"); !ok || got != "" {
		t.Errorf("data-conversation-id = %q, %v; want present and empty", got, ok)
	}
	if got := root.AttrOr("data-ws-path", ""); got != "/api/v1/chat" {
		t.Errorf("data-ws-path = %q", got)
	}
	if got := Text(MustTestid(t, doc, "chat-agent-name")); got != "Echo Bot" {
		t.Errorf("agent name = %q", got)
	}
	if got := MustTestid(t, doc, "chat-agent-link").AttrOr("href", ""); got != "/agents/"+id {
		t.Errorf("agent link = %q", got)
	}
	if got := MustTestid(t, doc, "chat-agent-status").AttrOr("data-status", ""); got != store.StatusOnline {
		t.Errorf("agent status = %q", got)
	}
	if got := MustTestid(t, doc, "chat-agent-host").AttrOr("data-local", ""); got != "true" {
		t.Errorf("chat-agent-host data-local = %q", got)
	}
	if n := Testid(doc, "chat-offline").Length(); n != 0 {
		t.Error("a local agent is shown as offline")
	}
	MustTestid(t, doc, "messages-empty")
	MustTestid(t, doc, "conversations-empty")
	if n := Testid(doc, "message").Length(); n != 0 {
		t.Errorf("%d messages on a new conversation", n)
	}
	newConv := MustTestid(t, doc, "new-conversation")
	if newConv.AttrOr("href", "") != "/chat/"+id || newConv.AttrOr("aria-current", "") != "page" {
		t.Errorf("new conversation link = %q (aria-current %q)", newConv.AttrOr("href", ""), newConv.AttrOr("aria-current", ""))
	}

	form := MustTestid(t, doc, "composer")
	if form.AttrOr("method", "") != "post" || form.AttrOr("action", "") != "/chat/"+id {
		t.Errorf("composer form: method %q action %q", form.AttrOr("method", ""), form.AttrOr("action", ""))
	}
	if form.Find(`textarea[name="text"]`).Length() != 1 || form.Find(`input[type="hidden"][name="c"]`).Length() != 1 {
		t.Error("composer lacks the text area or the conversation field")
	}
	if Testid(doc, "composer-send").AttrOr("type", "") != "submit" {
		t.Error("the send button does not submit the form")
	}
	if _, hidden := MustTestid(t, doc, "composer-error").Attr("hidden"); !hidden {
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
	js := v.Do(http.MethodGet, script, nil)
	WantStatus(t, js, http.StatusOK)
	if ct := js.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("chat.js Content-Type = %q", ct)
	}

	// The agent page links here.
	doc = v.Page("/agents/"+id, http.StatusOK)
	if got := MustTestid(t, doc, "chat-agent").AttrOr("href", ""); got != "/chat/"+id {
		t.Errorf("agent page chat link = %q", got)
	}
}

// checkChatTemplates checks the <template>s chat.js clones: one of each,
// inside the chat root (the script looks there), each the server's own
// markup for what it stands for.
func checkChatTemplates(t *testing.T, doc *goquery.Document, agentID string) {
	t.Helper()
	root := MustTestid(t, doc, "chat")
	if n, m := doc.Find(`[data-testid="chat-template"]`).Length(), root.Find(`template[data-testid="chat-template"]`).Length(); n != 21 || m != n {
		t.Errorf("%d chat templates, %d of them <template>s in the chat root; want 21 (with markdown, code-copy, error-stopped, reply-actions, the three of a tool call and the approval card)", n, m)
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
		{"error-stopped", "error", "Stopped:"},
	} {
		m := tmpl(tt.name)
		if m.Length() != 1 || m.AttrOr("data-testid", "") != "message" || m.AttrOr("data-role", "") != tt.role || m.Find(".msg-text").Length() != 1 {
			h, _ := goquery.OuterHtml(m)
			t.Errorf("template %q is not a %s message: %s", tt.name, tt.role, h)
		}
		if got := Text(m.Find(".msg-label")); got != tt.label {
			t.Errorf("template %q label = %q, want %q", tt.name, got, tt.label)
		}
		if retry := m.Find(`button[type="button"][data-testid="message-retry"]`).Length(); retry != 0 != (tt.role == "error") {
			t.Errorf("template %q has %d retry buttons", tt.name, retry)
		}
		if typing := m.Find(`[data-testid="typing"]`).Length(); typing != 0 != (tt.name == "agent") {
			t.Errorf("template %q has %d typing indicators", tt.name, typing)
		}
	}
	if m := tmpl("error-stopped"); !m.HasClass("msg-stopped") {
		t.Error("the stopped template is not the calm msg-stopped note")
	}
	if a := tmpl("reply-actions"); a.AttrOr("data-testid", "") != "message-actions" || a.Find(`[data-testid="message-copy"]`).Length() != 1 ||
		a.Find(`form[data-testid="regenerate-form"] input[name="redo"][value="retry"]`).Length() != 1 {
		h, _ := goquery.OuterHtml(a)
		t.Errorf("reply-actions template: %s", h)
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
	if got := Text(conv.Find(".conv-agent")); got != "Echo Bot" {
		t.Errorf("conversation template agent = %q", got)
	}
}

func TestChatPageMissing(t *testing.T) {
	e := NewChat(t)
	gone := e.SeedAgent("", SimpleInput("doomed", "Doomed"))
	if err := e.Server.Registry.Delete(t.Context(), registry.Operator, gone.Record.ID); err != nil {
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
			doc := e.Page(tt.path, http.StatusNotFound)
			if got := MustTestid(t, doc, "error-page").AttrOr("data-status", ""); got != "404" {
				t.Errorf("error page status = %q", got)
			}
		})
	}
	resp := e.PostForm("/chat/"+unknown, url.Values{"text": {"hello"}})
	doc := ParsePage(t, resp, http.StatusNotFound)
	MustTestid(t, doc, "error-page")
}

// TestChatForm is the composer without JavaScript: a POST runs one turn
// and redirects back to the conversation.
func TestChatForm(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	alice := e.Visitor()
	alice.Page("/chat/"+id, http.StatusOK)

	resp := alice.PostForm("/chat/"+id, url.Values{"text": {"  hello  there  "}, "c": {""}})
	WantStatus(t, resp, http.StatusSeeOther)
	loc := Location(t, resp)
	u, err := url.Parse(loc)
	if err != nil || u.Path != "/chat/"+id || u.Query().Get("c") == "" {
		t.Fatalf("redirect to %q", loc)
	}
	conv := u.Query().Get("c")

	doc := alice.Page(loc, http.StatusOK)
	if got := MustTestid(t, doc, "chat").AttrOr("data-conversation-id", ""); got != conv {
		t.Errorf("data-conversation-id = %q, want %q", got, conv)
	}
	if got, _ := InputValue(doc, "c"); got != conv {
		t.Errorf("composer c = %q, want %q", got, conv)
	}
	want := [][2]string{{"user", "hello  there"}, {"agent", "hello  there"}}
	if got := ChatMessages(doc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages = %q, want %q", got, want)
	}
	if n := Testid(doc, "messages-empty").Length(); n != 0 {
		t.Error("the empty state is shown next to messages")
	}
	item := MustTestid(t, doc, "conversation")
	if item.Length() != 1 || item.AttrOr("data-conversation-id", "") != conv || item.AttrOr("data-current", "") != "true" {
		t.Errorf("side list item: %d items, id %q, current %q", item.Length(), item.AttrOr("data-conversation-id", ""), item.AttrOr("data-current", ""))
	}
	if got := item.Find("a").AttrOr("href", ""); got != "/chat/"+id+"?c="+conv {
		t.Errorf("side list link = %q", got)
	}
	if got := Text(item.Find(".conv-title")); got != "hello there" {
		t.Errorf("conversation title = %q", got)
	}
	if MustTestid(t, doc, "new-conversation").AttrOr("aria-current", "") != "" {
		t.Error("new conversation is marked current on an existing one")
	}

	// The next message continues the conversation.
	resp = alice.PostForm("/chat/"+id, url.Values{"text": {"second"}, "c": {conv}})
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != loc {
		t.Errorf("second redirect = %q, want %q", got, loc)
	}
	msgs, err := e.Store.ListMessages(t.Context(), conv, 10)
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
			resp := alice.PostForm("/chat/"+id, url.Values{"text": {tt.text}, "c": {conv}})
			doc := ParsePage(t, resp, tt.status)
			errEl := MustTestid(t, doc, "composer-error")
			if _, hidden := errEl.Attr("hidden"); hidden || Text(errEl) == "" {
				t.Errorf("composer error hidden=%v text %q", hidden, Text(errEl))
			}
			if got := MustTestid(t, doc, "composer-input").Text(); got != tt.text {
				t.Errorf("draft kept = %.40q…, want %.40q…", got, tt.text)
			}
			if got := MustTestid(t, doc, "chat").AttrOr("data-conversation-id", ""); got != conv {
				t.Errorf("conversation lost on a refused send: %q", got)
			}
		})
	}
	if msgs, _ := e.Store.ListMessages(t.Context(), conv, 10); len(msgs) != 4 {
		t.Errorf("a refused send was stored: %d messages", len(msgs))
	}

	// Another visitor cannot post into it, or cross-site.
	bob := e.Visitor()
	resp = bob.PostForm("/chat/"+id, url.Values{"text": {"hijack"}, "c": {conv}})
	ParsePage(t, resp, http.StatusNotFound)
	resp = alice.Do(http.MethodPost, "/chat/"+id, "text=x", "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	WantStatus(t, resp, http.StatusForbidden)
	if msgs, _ := e.Store.ListMessages(t.Context(), conv, 10); len(msgs) != 4 {
		t.Errorf("a foreign post was stored: %d messages", len(msgs))
	}
}

func TestChatConversationAccess(t *testing.T) {
	e := NewChat(t)
	echo := e.SeedEcho("echo-bot", "Echo Bot")
	other := e.SeedEcho("other-bot", "Other Bot")

	alice := e.Visitor()
	alice.Page("/chat/"+echo, http.StatusOK)
	resp := alice.PostForm("/chat/"+echo, url.Values{"text": {"mine"}})
	WantStatus(t, resp, http.StatusSeeOther)
	conv, _ := url.Parse(Location(t, resp))
	c := conv.Query().Get("c")

	bob := e.Visitor()
	bob.Page("/chat/"+echo, http.StatusOK)
	for _, tt := range []struct {
		name string
		env  *Env
		path string
	}{
		{"someone else's", bob, "/chat/" + echo + "?c=" + c},
		{"without a session", e.Visitor(), "/chat/" + echo + "?c=" + c},
		{"another agent's page", alice, "/chat/" + other + "?c=" + c},
		{"unknown", alice, "/chat/" + echo + "?c=cnosuchconversation"},
		{"absurdly long", alice, "/chat/" + echo + "?c=" + strings.Repeat("c", 500)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.env.Page(tt.path, http.StatusNotFound)
			MustTestid(t, doc, "error-page")
			if strings.Contains(doc.Text(), "mine") {
				t.Error("the 404 page shows the conversation")
			}
		})
	}
	// Bob's side list does not show Alice's conversation.
	doc := bob.Page("/chat/"+echo, http.StatusOK)
	if n := Testid(doc, "conversation").Length(); n != 0 {
		t.Errorf("bob sees %d conversations", n)
	}
	// Alice's own page shows it.
	alice.Page("/chat/"+echo+"?c="+c, http.StatusOK)
}

// TestChatHistory renders stored conversations: every role, text escaped
// and kept as typed, the side list across agents.
func TestChatHistory(t *testing.T) {
	e := NewChat(t)
	echo := e.SeedEcho("echo-bot", "Echo Bot")
	other := e.SeedEcho("other-bot", "Other Bot")
	e.Signup("carol", "password-carol-1")
	u, err := e.Store.GetUserByHandle(t.Context(), "carol")
	if err != nil {
		t.Fatal(err)
	}
	owner := "user:" + strconv.FormatInt(u.ID, 10)
	ctx := t.Context()
	base := time.Now().Add(-time.Hour).UTC()
	mk := func(id, agentID, title string, at time.Time) {
		t.Helper()
		if _, err := e.Store.CreateConversation(ctx, store.Conversation{ID: id, AgentID: agentID, OwnerKey: owner, Title: title, CreatedAt: at, UpdatedAt: at}); err != nil {
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
		if _, err := e.Store.AppendMessage(ctx, store.Message{ConversationID: "cfirst", Role: m[0], Text: m[1], CreatedAt: base.Add(2*time.Minute + time.Duration(i)*time.Second)}); err != nil {
			t.Fatal(err)
		}
	}

	resp := e.Do(http.MethodGet, "/chat/"+echo+"?c=cfirst", nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "<script>alert") || strings.Contains(string(body), "<i>tags") || strings.Contains(string(body), "<b>first") {
		t.Error("message or title text is not escaped")
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, %v", resp.StatusCode, err)
	}
	CheckCSPClean(t, doc)
	checkChatTemplates(t, doc, echo)
	if got := ChatMessages(doc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages = %q\nwant %q", got, want)
	}
	errMsg := Testid(doc, "message").Last()
	if !errMsg.HasClass("msg-error") || errMsg.Find(".msg-label").Length() != 1 {
		t.Error("an error message is not styled as an inline error")
	}
	Testid(doc, "message").Each(func(_ int, s *goquery.Selection) {
		if _, ok := s.Attr("data-message-id"); !ok {
			t.Error("a stored message has no data-message-id")
		}
	})

	// Side list: both conversations, latest first, each linking to its
	// own agent's page; the open one is current.
	items := MustTestid(t, doc, "conversation")
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
		if got := Text(it.Find(".conv-agent")); got != w.name {
			t.Errorf("item %d agent = %q, want %q", i, got, w.name)
		}
	}
	if got := Text(items.Eq(0).Find(".conv-title")); got != "<b>first</b>" {
		t.Errorf("title = %q", got)
	}
}

// TestChatFormHeldToRepliesAtOnce: a turn of the composer without
// JavaScript counts against the replies on their way, as AgentChat's live
// turns do: with the node's bound taken, the form is refused with 429 and
// the text kept; once a reply is in, it goes through.
func TestChatFormHeldToRepliesAtOnce(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	alice := e.Visitor()
	alice.Page("/chat/"+id, http.StatusOK)
	var releases []func()
	for i := range chat.DefaultLiveMaxTotal {
		release, err := e.Server.Live.Hold(chat.Owner(fmt.Sprintf("other-%d", i)))
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		releases = append(releases, release)
	}
	resp := alice.PostForm("/chat/"+id, url.Values{"text": {"one more"}, "c": {""}})
	doc := ParsePage(t, resp, http.StatusTooManyRequests)
	if !strings.Contains(Text(doc.Selection), "wait for one to finish") {
		t.Error("the refusal does not say to wait for a reply")
	}
	if got := doc.Find(`textarea[name="text"]`).Text(); got != "one more" {
		t.Errorf("the draft is lost: %q", got)
	}
	releases[0]()
	WantStatus(t, alice.PostForm("/chat/"+id, url.Values{"text": {"now"}, "c": {""}}), http.StatusSeeOther)
}
