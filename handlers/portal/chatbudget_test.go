package portal_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatFormBudgetPerSession: the form without JavaScript counts a
// visitor's per-minute chat budget by its session, so a second person
// behind the same address still chats once the first has spent theirs
// (before, the address's budget was one visitor's, shared by all).
func TestChatFormBudgetPerSession(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.ChatRateLimit = 30 }) // a burst of 5
	UseRuntime(e)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	alice, bob := e.Visitor(), e.Visitor()
	alice.Page("/chat/"+id, http.StatusOK)
	bob.Page("/chat/"+id, http.StatusOK)
	refused := false
	for range 10 {
		resp := alice.PostForm("/chat/"+id, url.Values{"text": {"hello"}, "c": {""}})
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			refused = true
			break
		}
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("alice's turn: %d", resp.StatusCode)
		}
	}
	if !refused {
		t.Fatal("alice was never held to her budget")
	}
	WantStatus(t, bob.PostForm("/chat/"+id, url.Values{"text": {"hello"}, "c": {""}}), http.StatusSeeOther)
}
