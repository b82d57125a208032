package portal_test

import (
	"net/http"
	"strings"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestRegisterErrorsAsTyped: an empty name is "required" (not the format
// rule), and a bad tag is quoted as it was typed, not lower-cased; the
// tags field keeps what was typed.
func TestRegisterErrorsAsTyped(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")

	doc := ParsePage(t, e.PostForm("/register", RegisterForm("name", "")), http.StatusUnprocessableEntity)
	if got := Text(MustTestid(t, doc, "error-name")); got != "is required" {
		t.Errorf("empty name: %q, want is required", got)
	}

	doc = ParsePage(t, e.PostForm("/register", RegisterForm("tags", "ok, Web Search")), http.StatusUnprocessableEntity)
	msg := Text(doc.Find(`[data-testid^="error-tags"]`))
	if !strings.Contains(msg, `"Web Search"`) || strings.Contains(msg, "web search") {
		t.Errorf("tag error %q, want the tag as typed", msg)
	}
	if v := doc.Find(`[name="tags"]`).AttrOr("value", ""); v != "ok, Web Search" {
		t.Errorf("tags field %q, want what was typed", v)
	}
}
