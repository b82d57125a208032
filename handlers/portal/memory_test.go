package portal_test

import (
	"github.com/PuerkitoBio/goquery"

	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// memoryModel calls remember for "remember: X" and recall for "recall:
// X", then answers with what the tool said.
func memoryModel(req fakellm.Request) fakellm.Reply {
	if res := req.ToolResults(); len(res) > 0 {
		return fakellm.Reply{Text: "tool said " + res[len(res)-1]}
	}
	last := req.LastUser()
	if fact, ok := strings.CutPrefix(last, "remember: "); ok {
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("m1", "remember", map[string]string{"fact": fact})}}
	}
	if q, ok := strings.CutPrefix(last, "recall: "); ok {
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("m2", "recall", map[string]string{"query": q})}}
	}
	return fakellm.Reply{Text: "plain"}
}

// TestAccountMemories: an llm agent with memory remembers a fact of a
// signed-in person in one conversation and recalls it in another; the
// account page lists it under the agent, a cross-site form cannot forget
// it, another person cannot delete it, and once the person forgets it
// there (one fact, then all) the agent recalls nothing.
func TestAccountMemories(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		UseRuntime(e)
		e.AllowPrivateEndpoints()
		llm := httptest.NewServer(&fakellm.Server{Model: "demo", Script: memoryModel})
		t.Cleanup(llm.Close)
		e.Signup("alice", "password-alice")
		in := SimpleInput("memo-bot", "Memo Bot")
		in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: llm.URL + "/v1", Model: "demo", Memory: true}
		id := e.SeedAgent("alice", in).Record.ID

		// say sends text in a new conversation and returns the agent's
		// reply.
		say := func(who *Env, text string) string {
			t.Helper()
			resp := who.PostForm("/chat/"+id, url.Values{"text": {text}, "c": {""}})
			WantStatus(t, resp, http.StatusSeeOther)
			doc := who.Page(Location(t, resp), http.StatusOK)
			msgs := ChatMessages(doc)
			if len(msgs) != 2 || msgs[1][0] != "agent" {
				t.Fatalf("%q: messages %q", text, msgs)
			}
			return msgs[1][1]
		}
		if got := say(e, "remember: my cat is called Tom"); !strings.Contains(got, "my cat is called Tom") {
			t.Fatalf("remember: %q", got)
		}
		say(e, "remember: I live in Lyon")
		if got := say(e, "recall: what is my cat called?"); !strings.Contains(got, "my cat is called Tom") {
			t.Fatalf("recall in another conversation: %q", got)
		}

		// An anonymous visitor has no memory.
		anon := e.Visitor()
		anon.Page("/chat/"+id, http.StatusOK)
		if got := say(anon, "recall: cat"); strings.Contains(got, "Tom") || !strings.Contains(got, "signed in") {
			t.Errorf("an anonymous visitor recalls: %q", got)
		}

		doc := e.Page("/account", http.StatusOK)
		group := MustTestid(t, doc, "memory-group")
		if group.AttrOr("data-agent-id", "") != id || !strings.Contains(Text(group.Find("h3")), "Memo Bot") {
			t.Errorf("memory group %q for agent %q", Text(group.Find("h3")), group.AttrOr("data-agent-id", ""))
		}
		facts := map[string]string{}
		Testid(doc, "memory").Each(func(_ int, s *goquery.Selection) {
			facts[Text(s.Find(".memory-fact"))] = s.AttrOr("data-memory-id", "")
		})
		catID := facts["my cat is called Tom"]
		if len(facts) != 2 || catID == "" || facts["I live in Lyon"] == "" {
			t.Fatalf("the account lists %q", facts)
		}

		// A cross-site form forgets nothing; another person's delete is a 404.
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.TS.URL+"/account/memories/delete", nil)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site forget: status %d, want 403", resp.StatusCode)
		}
		bob := e.Visitor()
		bob.Signup("bob", "password-bob")
		ParsePage(t, bob.PostForm("/account/memories/"+catID+"/delete", nil), http.StatusNotFound)
		WantStatus(t, bob.PostForm("/account/memories/delete", nil), http.StatusSeeOther)
		if got := say(e, "recall: cat"); !strings.Contains(got, "my cat is called Tom") {
			t.Fatalf("after the refused deletions: %q", got)
		}

		// Forget the one fact: it is gone, the other stays.
		resp = e.PostForm("/account/memories/"+catID+"/delete", nil)
		WantStatus(t, resp, http.StatusSeeOther)
		if got := Location(t, resp); got != "/account#memories" {
			t.Errorf("redirect to %q", got)
		}
		doc = e.Page("/account", http.StatusOK)
		if n := Testid(doc, "memory").Length(); n != 1 || strings.Contains(doc.Text(), "my cat is called Tom") {
			t.Errorf("after forgetting one: %d facts listed", n)
		}
		if got := say(e, "recall: cat"); strings.Contains(got, "Tom") {
			t.Errorf("a forgotten fact is recalled: %q", got)
		}
		// Forget all: nothing is recalled any more.
		WantStatus(t, e.PostForm("/account/memories/delete", url.Values{"agent": {id}}), http.StatusSeeOther)
		MustTestid(t, e.Page("/account", http.StatusOK), "memories-empty")
		if got := say(e, "recall: Lyon"); !strings.Contains(got, `"facts":[]`) {
			t.Errorf("after forgetting all: %q", got)
		}
	})
}

// TestRegisterMemoryAndHistoryBudget: an llm agent's owner turns memory
// on and sets the history budget on the form; the edit form shows both,
// a budget out of range is refused on its field, and a blank one and an
// unchecked box go back to the node's default and no memory.
func TestRegisterMemoryAndHistoryBudget(t *testing.T) {
	e := New(t)
	e.Signup("erin", "password-erin-1")
	llm := []string{"backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_model", "gpt-x"}
	resp := e.PostForm("/register", RegisterForm(append(llm, "backend_memory", "true", "backend_history_tokens", "2000")...))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || !b.Memory || b.HistoryTokens != 2000 {
		t.Fatalf("backend after registering = %v (history %d), %v", b, b.HistoryTokens, err)
	}
	editPath := "/account/agents/" + id + "/edit"
	doc := e.Page(editPath, http.StatusOK)
	if _, checked := doc.Find(`#backend-memory`).Attr("checked"); !checked || doc.Find(`#backend-history-tokens`).AttrOr("value", "") != "2000" {
		t.Fatalf("edit form: memory checked %t, history %q", checked, doc.Find(`#backend-history-tokens`).AttrOr("value", ""))
	}
	for _, bad := range []string{"100", "lots"} {
		doc = ParsePage(t, e.PostForm(editPath, RegisterForm(append(llm, "backend_history_tokens", bad)...)), http.StatusUnprocessableEntity)
		if msg := Text(doc.Find(`[id="err-backend.history_tokens"]`)); !strings.Contains(msg, "500 to") {
			t.Errorf("%q: field error %q, want the range", bad, msg)
		}
	}
	WantStatus(t, e.PostForm(editPath, RegisterForm(llm...)), http.StatusSeeOther)
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || b.Memory || b.HistoryTokens != 0 {
		t.Errorf("backend after saving blank: memory %t, history %d, %v", b.Memory, b.HistoryTokens, err)
	}
}
