package portal_test

import (
	"net/http"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestPagesRender loads every page, anonymous and logged in, and checks
// its status, a key element and that it keeps to the CSP.
func TestPagesRender(t *testing.T) {
	e := New(t)
	l := e.SeedAgent("alice", SimpleInput("weather-bot", "Weather Bot", "weather"))
	id := l.Record.ID
	anon := e.Visitor()
	e.Signup("bob", "password-bob")
	alice := e.Visitor()
	alice.Login("alice", "password-alice")

	tests := []struct {
		name   string
		env    *Env
		path   string
		status int
		testid string
	}{
		{"home", anon, "/", 200, "count-agents"},
		{"agents", anon, "/agents", 200, "results"},
		{"agent", anon, "/agents/" + id, 200, "agent-detail"},
		{"nodes", anon, "/nodes", 200, "node-self"},
		{"signup", anon, "/signup", 200, "signup-form"},
		{"login", anon, "/login", 200, "login-form"},
		{"not found", anon, "/no/such/page", 404, "error-page"},
		{"home logged in", e, "/", 200, "nav-logout"},
		{"register", e, "/register", 200, "agent-form"},
		{"account", e, "/account", 200, "tokens-empty"},
		{"edit own", alice, "/account/agents/" + id + "/edit", 200, "agent-form"},
		{"edit other's", e, "/account/agents/" + id + "/edit", 403, "error-page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.env.Page(tt.path, tt.status)
			MustTestid(t, doc, tt.testid)
			MustTestid(t, doc, "nav")
			if got := doc.Find("head title").Text(); got == "" {
				t.Error("no <title>")
			}
		})
	}
}

// TestNavShowsUser checks the nav for visitors and members.
func TestNavShowsUser(t *testing.T) {
	e := New(t)
	doc := e.Page("/", http.StatusOK)
	MustTestid(t, doc, "nav-login")
	MustTestid(t, doc, "nav-signup")
	if Testid(doc, "nav-logout").Length() != 0 {
		t.Error("visitor sees a logout button")
	}
	e.Signup("carol", "password-carol")
	doc = e.Page("/", http.StatusOK)
	if got := Text(MustTestid(t, doc, "nav-account")); got != "@carol" {
		t.Errorf("nav-account = %q", got)
	}
	if f := Testid(doc, "nav-logout").Closest("form"); f.AttrOr("method", "") != "post" || f.AttrOr("action", "") != "/logout" {
		t.Error("logout is not a POST form to /logout")
	}
}

// TestErrorPageHTMX: an htmx request gets a fragment, not a page.
func TestErrorPageHTMX(t *testing.T) {
	e := New(t)
	doc := e.Page("/agents/not-an-id", http.StatusNotFound, "HX-Request", "true")
	if !IsFragment(doc) {
		t.Fatal("htmx error response is a whole page")
	}
	if got := MustTestid(t, doc, "error-fragment").AttrOr("data-status", ""); got != "404" {
		t.Errorf("data-status = %q", got)
	}
	doc = e.Page("/agents/not-an-id", http.StatusNotFound)
	if got := Text(MustTestid(t, doc, "error-message")); got != "No agent has this id." {
		t.Errorf("message = %q", got)
	}
}
