package handlers

import (
	"net/http"
	"testing"
)

// TestPagesRender loads every page, anonymous and logged in, and checks
// its status, a key element and that it keeps to the CSP.
func TestPagesRender(t *testing.T) {
	e := newTestServer(t)
	l := e.seedAgent("alice", simpleInput("weather-bot", "Weather Bot", "weather"))
	id := l.Record.ID
	anon := e.visitor()
	e.signup("bob", "password-bob")
	alice := e.visitor()
	alice.login("alice", "password-alice")

	tests := []struct {
		name   string
		env    *testEnv
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
			doc := tt.env.page(tt.path, tt.status)
			mustTestid(t, doc, tt.testid)
			mustTestid(t, doc, "nav")
			if got := doc.Find("head title").Text(); got == "" {
				t.Error("no <title>")
			}
		})
	}
}

// TestNavShowsUser checks the nav for visitors and members.
func TestNavShowsUser(t *testing.T) {
	e := newTestServer(t)
	doc := e.page("/", http.StatusOK)
	mustTestid(t, doc, "nav-login")
	mustTestid(t, doc, "nav-signup")
	if testid(doc, "nav-logout").Length() != 0 {
		t.Error("visitor sees a logout button")
	}
	e.signup("carol", "password-carol")
	doc = e.page("/", http.StatusOK)
	if got := text(mustTestid(t, doc, "nav-account")); got != "@carol" {
		t.Errorf("nav-account = %q", got)
	}
	if f := testid(doc, "nav-logout").Closest("form"); f.AttrOr("method", "") != "post" || f.AttrOr("action", "") != "/logout" {
		t.Error("logout is not a POST form to /logout")
	}
}

// TestErrorPageHTMX: an htmx request gets a fragment, not a page.
func TestErrorPageHTMX(t *testing.T) {
	e := newTestServer(t)
	doc := e.page("/agents/not-an-id", http.StatusNotFound, "HX-Request", "true")
	if !isFragment(doc) {
		t.Fatal("htmx error response is a whole page")
	}
	if got := mustTestid(t, doc, "error-fragment").AttrOr("data-status", ""); got != "404" {
		t.Errorf("data-status = %q", got)
	}
	doc = e.page("/agents/not-an-id", http.StatusNotFound)
	if got := text(mustTestid(t, doc, "error-message")); got != "No agent has this id." {
		t.Errorf("message = %q", got)
	}
}
