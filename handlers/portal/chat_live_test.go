package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// startConversation posts a message as v without JavaScript and returns
// the conversation it went to.
func startConversation(t *testing.T, v *Env, agentID, text string) string {
	t.Helper()
	resp := v.PostForm("/chat/"+agentID, url.Values{"text": {text}, "c": {""}})
	WantStatus(t, resp, http.StatusSeeOther)
	u, err := url.Parse(Location(t, resp))
	if err != nil || u.Query().Get("c") == "" {
		t.Fatalf("redirect %v", u)
	}
	return u.Query().Get("c")
}

// TestChatRenameDeleteForms: rename and delete work as plain forms, for
// the owner only; a bad title is refused with a notice.
func TestChatRenameDeleteForms(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	alice := e.Visitor()
	alice.Page("/chat/"+id, http.StatusOK)
	conv := startConversation(t, alice, id, "hello")
	base := "/chat/" + id + "/conversations/" + conv

	doc := alice.Page("/chat/"+id+"?c="+conv, http.StatusOK)
	if got := MustTestid(t, doc, "rename-form").AttrOr("action", ""); got != base+"/rename" {
		t.Errorf("rename form posts to %q", got)
	}
	if got := MustTestid(t, doc, "rename-title").AttrOr("value", ""); got != "hello" {
		t.Errorf("rename field holds %q", got)
	}

	bob := e.Visitor()
	bob.Page("/chat/"+id, http.StatusOK)
	WantStatus(t, bob.PostForm(base+"/rename", url.Values{"title": {"mine"}}), http.StatusNotFound)
	WantStatus(t, bob.PostForm(base+"/delete", nil), http.StatusNotFound)

	resp := alice.PostForm(base+"/rename", url.Values{"title": {"   "}})
	WantStatus(t, resp, http.StatusSeeOther)
	doc = alice.Page(Location(t, resp), http.StatusOK)
	if got := Text(MustTestid(t, doc, "flash")); got == "" || got == "Conversation renamed." {
		t.Errorf("flash after an empty title = %q", got)
	}
	resp = alice.PostForm(base+"/rename", url.Values{"title": {"Trip plans"}})
	WantStatus(t, resp, http.StatusSeeOther)
	doc = alice.Page(Location(t, resp), http.StatusOK)
	if got := Text(MustTestid(t, doc, "conversation").Find(".conv-title")); got != "Trip plans" {
		t.Errorf("title after rename = %q", got)
	}

	resp = alice.PostForm(base+"/delete", nil)
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != "/chat/"+id {
		t.Errorf("delete redirects to %q", got)
	}
	doc = alice.Page("/chat/"+id, http.StatusOK)
	MustTestid(t, doc, "conversations-empty")
	alice.Page("/chat/"+id+"?c="+conv, http.StatusNotFound)
	if ms, err := e.Store.ListMessages(t.Context(), conv, 10); err != nil || len(ms) != 0 {
		t.Errorf("messages after delete: %+v, %v", ms, err)
	}
}

// TestChatDeletedAgentReadOnly: a conversation whose agent was deleted
// opens (not a 404), read-only: no composer, no script, no retry; a new
// conversation with that agent is still a 404.
func TestChatDeletedAgentReadOnly(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("doomed-bot", "Doomed Bot")
	alice := e.Visitor()
	alice.Page("/chat/"+id, http.StatusOK)
	conv := startConversation(t, alice, id, "remember this")
	if err := e.Server.Registry.Delete(t.Context(), registry.Operator, id); err != nil {
		t.Fatal(err)
	}
	doc := alice.Page("/chat/"+id+"?c="+conv, http.StatusOK)
	MustTestid(t, doc, "chat-readonly")
	if n := Testid(doc, "composer").Length(); n != 0 {
		t.Errorf("%d composers on a read-only conversation", n)
	}
	if n := doc.Find(`script[src^="/static/chat."]`).Length(); n != 0 {
		t.Error("chat.js on a read-only conversation")
	}
	want := [][2]string{{"user", "remember this"}, {"agent", "remember this"}}
	if got := ChatMessages(doc); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages = %q, want %q", got, want)
	}
	MustTestid(t, doc, "delete-form")
	alice.Page("/chat/"+id, http.StatusNotFound)
	e.Visitor().Page("/chat/"+id+"?c="+conv, http.StatusNotFound) // not theirs
	resp := alice.PostForm("/chat/"+id+"/conversations/"+conv+"/delete", nil)
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != "/agents" {
		t.Errorf("delete of a deleted agent's conversation redirects to %q", got)
	}
}

// TestChatStartersAndRetryForm: an empty conversation links the agent's
// skill examples (?prompt= fills the composer without JavaScript); a
// stored failure offers Try again as a form that sends the message again
// in place of the failed exchange.
func TestChatStartersAndRetryForm(t *testing.T) {
	e := NewChat(t)
	in := SimpleInput("starter-bot", "Starter Bot")
	in.Skills = []agent.Skill{{ID: "a", Name: "A", Examples: []string{"Say hi", "Say hi", "Count to 3"}}, {ID: "b", Name: "B", Examples: []string{"x1", "x2", "x3"}}}
	id := e.SeedAgent("", in).Record.ID
	alice := e.Visitor()
	doc := alice.Page("/chat/"+id, http.StatusOK)
	var hrefs []string
	Testid(doc, "starter-prompt").Each(func(_ int, s *goquery.Selection) { hrefs = append(hrefs, s.AttrOr("href", "")) })
	want := []string{"/chat/" + id + "?prompt=Say+hi", "/chat/" + id + "?prompt=Count+to+3", "/chat/" + id + "?prompt=x1", "/chat/" + id + "?prompt=x2"}
	if fmt.Sprint(hrefs) != fmt.Sprint(want) {
		t.Errorf("starter links %q, want %q", hrefs, want)
	}
	doc = alice.Page(want[1], http.StatusOK)
	if got := Text(MustTestid(t, doc, "composer-input")); got != "Count to 3" {
		t.Errorf("composer after ?prompt= = %q", got)
	}

	answerer := e.Server.Chat.Local
	e.Server.Chat.Local = FailingAnswerer{Err: agent.ErrBackendUnavailable}
	conv := startConversation(t, alice, id, "try me")
	doc = alice.Page("/chat/"+id+"?c="+conv, http.StatusOK)
	if n := Testid(doc, "starter-prompts").Length(); n != 0 {
		t.Error("starter prompts on a conversation with messages")
	}
	form := MustTestid(t, doc, "retry-form")
	if form.AttrOr("action", "") != "/chat/"+id || form.Find(`input[name="redo"]`).AttrOr("value", "") != "retry" {
		h, _ := goquery.OuterHtml(form)
		t.Errorf("retry form %s", h)
	}
	e.Server.Chat.Local = answerer
	resp := alice.PostForm("/chat/"+id, url.Values{"c": {conv}, "redo": {"retry"}})
	WantStatus(t, resp, http.StatusSeeOther)
	doc = alice.Page(Location(t, resp), http.StatusOK)
	wantMsgs := [][2]string{{"user", "try me"}, {"agent", "try me"}}
	if got := ChatMessages(doc); fmt.Sprint(got) != fmt.Sprint(wantMsgs) {
		t.Errorf("messages after retry = %q, want %q", got, wantMsgs)
	}
	if n := Testid(doc, "retry-form").Length(); n != 0 {
		t.Error("Try again offered after a good reply")
	}
}
