package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

func TestAccountTokens(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")

	doc := e.Page("/account", http.StatusOK)
	MustTestid(t, doc, "tokens-empty")
	if Testid(doc, "new-token").Length() != 0 {
		t.Fatal("a token is shown before one is created")
	}

	// Invalid names keep the typed value and say why.
	for _, name := range []string{"", "   ", strings.Repeat("n", 65), "two\nlines"} {
		doc := ParsePage(t, e.PostForm("/account/tokens", url.Values{"name": {name}}), http.StatusUnprocessableEntity)
		MustTestid(t, doc, "error-token_name")
		if Testid(doc, "new-token").Length() != 0 {
			t.Errorf("name %q: token created", name)
		}
	}

	// Create: the POST redirects (a reload cannot create another), and
	// the next page shows the token, once.
	resp := e.PostForm("/account/tokens", url.Values{"name": {"laptop"}})
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != "/account/tokens" {
		t.Fatalf("token POST redirects to %q", got)
	}
	doc = e.Page("/account/tokens", http.StatusOK)
	token := Text(MustTestid(t, doc, "new-token"))
	if !strings.HasPrefix(token, httpkit.TokenPrefix) || len(token) < 40 {
		t.Fatalf("new token = %q", token)
	}
	if copy := MustTestid(t, doc, "new-token").Parent().Find(`[data-testid="copy"]`); copy.AttrOr("data-copy-target", "") != "#new-token" {
		t.Error("no copy button for the new token")
	}
	row := MustTestid(t, doc, "token-row")
	if got := Text(row.Find("td").First()); got != "laptop" {
		t.Errorf("token row name = %q", got)
	}
	// It works on the API, as alice.
	auth := []string{"Authorization", "Bearer " + token}
	resp = e.Do(http.MethodPost, "/api/v1/agents", SimpleInput("api-bot", "API Bot"), auth...)
	WantStatus(t, resp, http.StatusCreated)
	if got := Decode[apiwire.Agent](t, resp); got.Owner != "alice" {
		t.Errorf("token registered for %q", got.Owner)
	}
	// Shown once: the next visit lists it (now used) without the token.
	resp = e.Do(http.MethodGet, "/account", nil)
	doc = ParsePage(t, resp, http.StatusOK)
	if Testid(doc, "new-token").Length() != 0 || strings.Contains(doc.Text(), token) {
		t.Fatal("the token is shown again")
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}
	row = MustTestid(t, doc, "token-row")
	if got := Text(row.Find("td").Eq(2)); got == "never" {
		t.Error("last used not updated")
	}
	if got := MustTestid(t, doc, "account-agent").AttrOr("data-agent-id", ""); got == "" {
		t.Error("API-registered agent missing from the account")
	}
	tokenID := row.AttrOr("data-token-id", "")

	// Someone else cannot delete it.
	other := e.Visitor()
	other.Signup("bob", "password-bob")
	ParsePage(t, other.PostForm("/account/tokens/"+tokenID+"/delete", nil), http.StatusNotFound)
	ParsePage(t, other.PostForm("/account/tokens/not-a-number/delete", nil), http.StatusNotFound)

	// Delete: gone from the list, refused by the API.
	resp = e.PostForm("/account/tokens/"+tokenID+"/delete", nil)
	WantStatus(t, resp, http.StatusSeeOther)
	doc = e.Page("/account", http.StatusOK)
	MustTestid(t, doc, "tokens-empty")
	MustTestid(t, doc, "flash")
	WantStatus(t, e.Do(http.MethodPost, "/api/v1/agents", SimpleInput("api-bot-2", "API Bot 2"), auth...), http.StatusUnauthorized)
}

// TestAccountTokenReload: reloading the page after creating a token (the
// GET the POST redirected to) neither creates another token nor shows the
// token again, and /account/tokens is a page, not a 405.
func TestAccountTokenReload(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	MustTestid(t, e.Page("/account/tokens", http.StatusOK), "token-form")

	resp := e.PostForm("/account/tokens", url.Values{"name": {"laptop"}})
	WantStatus(t, resp, http.StatusSeeOther)
	if loc := Location(t, resp); strings.Contains(loc, httpkit.TokenPrefix) {
		t.Fatalf("the token is in the redirect URL %q", loc)
	}
	first := e.Page(Location(t, resp), http.StatusOK)
	token := Text(MustTestid(t, first, "new-token"))
	for range 2 { // reloads
		doc := e.Page(Location(t, resp), http.StatusOK)
		if n := Testid(doc, "token-row").Length(); n != 1 {
			t.Fatalf("after a reload: %d tokens, want 1", n)
		}
		if Testid(doc, "new-token").Length() != 0 || strings.Contains(doc.Text(), token) {
			t.Fatal("the token is shown again on reload")
		}
	}
}
