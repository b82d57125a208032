package portal_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestA2AAgentKey: the form takes an API key or bearer token for an a2a
// agent, stores it, never renders it back, and keeps it on an edit that
// leaves it blank.
func TestA2AAgentKey(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	card := "https://agents.example.com/.well-known/agent-card.json"
	resp := e.PostForm("/register", RegisterForm("backend_kind", "a2a", "backend_url", card, "backend_a2a_key", "sk-a2a-keep-me"))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || b.APIKey != "sk-a2a-keep-me" || b.URL != card {
		t.Fatalf("stored backend %v, %v", b, err)
	}
	editPath := "/account/agents/" + id + "/edit"
	resp = e.Do(http.MethodGet, editPath, nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "sk-a2a-keep-me") {
		t.Fatal("the edit form renders the key")
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	MustTestid(t, ParsePage(t, resp, http.StatusOK), "a2a-key-stored")
	WantStatus(t, e.PostForm(editPath, RegisterForm("backend_kind", "a2a", "backend_url", card, "display_name", "Form Bot 2")), http.StatusSeeOther)
	if b, _ := e.Store.GetBackend(t.Context(), id); b.APIKey != "sk-a2a-keep-me" {
		t.Fatalf("after an edit with a blank key: %q, want the stored one", b.APIKey)
	}
}
