package portal_test

import (
	"net/http"
	"strings"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestRegisterModelConcurrency: an llm agent's owner sets how many
// requests its model takes at once; the edit form shows it, a value out
// of range is refused on the field and kept as typed, and a blank one
// goes back to the node's default.
func TestRegisterModelConcurrency(t *testing.T) {
	e := New(t)
	e.Signup("erin", "password-erin-1")
	llm := []string{"backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_model", "gpt-x"}
	resp := e.PostForm("/register", RegisterForm(append(llm, "backend_concurrency", "2")...))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || b.Concurrency != 2 {
		t.Fatalf("backend after registering with 2 at once = %v (concurrency %d), %v", b, b.Concurrency, err)
	}
	editPath := "/account/agents/" + id + "/edit"
	doc := e.Page(editPath, http.StatusOK)
	if got := doc.Find(`#backend-concurrency`).AttrOr("value", ""); got != "2" {
		t.Fatalf("edit form shows %q requests at once, want 2", got)
	}
	for _, bad := range []string{"65", "many"} {
		doc = ParsePage(t, e.PostForm(editPath, RegisterForm(append(llm, "backend_concurrency", bad)...)), http.StatusUnprocessableEntity)
		if got := doc.Find(`#backend-concurrency`).AttrOr("value", ""); got != bad {
			t.Errorf("a refused %q shows %q", bad, got)
		}
		if msg := Text(doc.Find(`[id="err-backend.concurrency"]`)); !strings.Contains(msg, "1 to 64") {
			t.Errorf("%q: field error %q, want the range", bad, msg)
		}
	}
	WantStatus(t, e.PostForm(editPath, RegisterForm(llm...)), http.StatusSeeOther)
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || b.Concurrency != 0 {
		t.Errorf("backend after saving it blank: concurrency %d, %v", b.Concurrency, err)
	}
}
