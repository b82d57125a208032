package portal_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatSearchConversations: /chat?q= lists the visitor's own
// conversations whose title or messages hold the words, any case, with %
// taken literally; never another visitor's; no match says what to do.
func TestChatSearchConversations(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		UseRuntime(e)
		id := e.SeedEcho("echo-bot", "Echo Bot")
		alice := e.Visitor()
		alice.Page("/chat/"+id, http.StatusOK)
		lisbon := startConversation(t, alice, id, "Trip to Lisbon in May")
		soup := startConversation(t, alice, id, "carrot soup, 100% vegan")
		bob := e.Visitor()
		bob.Page("/chat/"+id, http.StatusOK)
		bobs := startConversation(t, bob, id, "lisbon for bob")

		ids := func(v *Env, q string) []string {
			t.Helper()
			doc := v.Page("/chat?q="+url.QueryEscape(q), http.StatusOK)
			if got, _ := InputValue(doc, "q"); got != strings.TrimSpace(q) {
				t.Errorf("search box after %q holds %q", q, got)
			}
			out := []string{}
			for _, n := range Testid(doc, "recent-conversation").Nodes {
				for _, a := range n.Attr {
					if a.Key == "data-conversation-id" {
						out = append(out, a.Val)
					}
				}
			}
			if len(out) == 0 {
				MustTestid(t, doc, "conversation-search-empty")
			}
			return out
		}
		for _, tc := range []struct {
			v    *Env
			q    string
			want []string
		}{
			{alice, "LISBON", []string{lisbon}},
			{alice, "lisbon", []string{lisbon}}, // the agent's echo and the title too: one entry
			{alice, "Soup", []string{soup}},
			{alice, "100%", []string{soup}},
			{alice, "%", []string{soup}},
			{alice, "_", []string{}},
			{alice, "nothing like this", []string{}},
			{bob, "lisbon", []string{bobs}},
			{bob, "soup", []string{}},
			{e.Visitor(), "lisbon", []string{}},
		} {
			if got := ids(tc.v, tc.q); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("search %q = %v, want %v", tc.q, got, tc.want)
			}
		}
		// An over-long query is refused with what to do.
		doc := alice.Page("/chat?q="+strings.Repeat("a", 201), http.StatusOK)
		MustTestid(t, doc, "conversation-search-error")
	})
}

// TestChatShareLink: the owner makes a read-only link, which another
// browser opens without signing in (no composer, no actions, no other
// conversation, noindex, no-store, an XSS payload inert); someone else
// can neither make nor revoke one; revoked, the link is a 404 that says
// so.
func TestChatShareLink(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		UseRuntime(e)
		id := e.SeedEcho("echo-bot", "Echo Bot")
		alice := e.Visitor()
		alice.Page("/chat/"+id, http.StatusOK)
		other := startConversation(t, alice, id, "a private matter")
		payload := `<script>alert(1)</script><img src=x onerror=alert(2)>`
		conv := startConversation(t, alice, id, payload)
		base := "/chat/" + id + "/conversations/" + conv

		doc := alice.Page("/chat/"+id+"?c="+conv, http.StatusOK)
		if got := MustTestid(t, doc, "share-form").AttrOr("action", ""); got != base+"/share" {
			t.Errorf("share form posts to %q", got)
		}
		if n := Testid(doc, "unshare-form").Length(); n != 0 {
			t.Error("Stop sharing offered for a conversation not shared")
		}

		bob := e.Visitor()
		bob.Page("/chat/"+id, http.StatusOK)
		WantStatus(t, bob.PostForm(base+"/share", nil), http.StatusNotFound)
		WantStatus(t, bob.PostForm(base+"/unshare", nil), http.StatusNotFound)
		if shared, err := e.Store.ConversationShared(t.Context(), conv); err != nil || shared {
			t.Fatalf("shared after another's attempt = %v, %v", shared, err)
		}

		resp := alice.PostForm(base+"/share", nil)
		doc = ParsePage(t, resp, http.StatusOK)
		link := Text(MustTestid(t, doc, "share-url"))
		MustTestid(t, doc, "copy-share-url")
		MustTestid(t, doc, "unshare-form")
		u, err := url.Parse(link)
		if err != nil || !strings.HasPrefix(u.Path, "/share/") {
			t.Fatalf("share link %q", link)
		}

		// Another browser, not signed in.
		reader := e.Visitor()
		resp = reader.Do("GET", u.Path, nil)
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("Cache-Control = %q", cc)
		}
		doc = ParsePage(t, resp, http.StatusOK)
		if got := doc.Find(`meta[name="robots"]`).AttrOr("content", ""); !strings.Contains(got, "noindex") {
			t.Errorf("robots meta = %q", got)
		}
		if got := Text(MustTestid(t, doc, "shared-agent")); !strings.Contains(got, "Echo Bot") {
			t.Errorf("agent line = %q", got)
		}
		want := [][2]string{{"user", payload}, {"agent", ""}}
		got := ChatMessages(doc)
		if len(got) != 2 || got[0] != want[0] || got[1][0] != "agent" {
			t.Errorf("messages = %q, want %q", got, want)
		}
		if n := doc.Find(`.msg-bubble script, .msg-bubble img, [onerror]`).Length(); n != 0 {
			t.Errorf("%d live elements from the payload", n)
		}
		for _, tid := range []string{"composer", "conversation-actions", "chat-side", "recent-conversation", "delete-form", "share-form"} {
			if n := Testid(doc, tid).Length(); n != 0 {
				t.Errorf("shared page has %s", tid)
			}
		}
		if html, _ := doc.Html(); strings.Contains(html, other) || strings.Contains(html, "a private matter") {
			t.Error("shared page shows another conversation")
		}
		CheckCSPClean(t, doc)

		resp = alice.PostForm(base+"/unshare", nil)
		WantStatus(t, resp, http.StatusSeeOther)
		doc = alice.Page(Location(t, resp), http.StatusOK)
		if n := Testid(doc, "unshare-form").Length(); n != 0 {
			t.Error("Stop sharing still offered after it")
		}
		resp = reader.Do("GET", u.Path, nil)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "revoked or never existed") {
			t.Errorf("revoked link: %d %q", resp.StatusCode, body)
		}
		resp = reader.Do("GET", "/share/"+strings.Repeat("A", 43), nil)
		resp.Body.Close()
		WantStatus(t, resp, http.StatusNotFound)
	})
}
