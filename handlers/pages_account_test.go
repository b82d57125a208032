package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

func TestAccountTokens(t *testing.T) {
	e := newTestServer(t)
	e.signup("alice", "password-alice")

	doc := e.page("/account", http.StatusOK)
	mustTestid(t, doc, "tokens-empty")
	if testid(doc, "new-token").Length() != 0 {
		t.Fatal("a token is shown before one is created")
	}

	// Invalid names keep the typed value and say why.
	for _, name := range []string{"", "   ", strings.Repeat("n", 65), "two\nlines"} {
		doc := parsePage(t, e.postForm("/account/tokens", url.Values{"name": {name}}), http.StatusUnprocessableEntity)
		mustTestid(t, doc, "error-token_name")
		if testid(doc, "new-token").Length() != 0 {
			t.Errorf("name %q: token created", name)
		}
	}

	// Create: the token is shown in this response only.
	doc = parsePage(t, e.postForm("/account/tokens", url.Values{"name": {"laptop"}}), http.StatusOK)
	token := text(mustTestid(t, doc, "new-token"))
	if !strings.HasPrefix(token, httpkit.TokenPrefix) || len(token) < 40 {
		t.Fatalf("new token = %q", token)
	}
	if copy := mustTestid(t, doc, "new-token").Parent().Find(`[data-testid="copy"]`); copy.AttrOr("data-copy-target", "") != "#new-token" {
		t.Error("no copy button for the new token")
	}
	row := mustTestid(t, doc, "token-row")
	if got := text(row.Find("td").First()); got != "laptop" {
		t.Errorf("token row name = %q", got)
	}
	// It works on the API, as alice.
	resp := e.do(http.MethodPost, "/api/v1/agents", simpleInput("api-bot", "API Bot"), bearer(token)...)
	wantStatus(t, resp, http.StatusCreated)
	if got := decode[apiwire.Agent](t, resp); got.Owner != "alice" {
		t.Errorf("token registered for %q", got.Owner)
	}
	// Shown once: the next visit lists it (now used) without the token.
	resp = e.do(http.MethodGet, "/account", nil)
	doc = parsePage(t, resp, http.StatusOK)
	if testid(doc, "new-token").Length() != 0 || strings.Contains(doc.Text(), token) {
		t.Fatal("the token is shown again")
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}
	row = mustTestid(t, doc, "token-row")
	if got := text(row.Find("td").Eq(2)); got == "never" {
		t.Error("last used not updated")
	}
	if got := mustTestid(t, doc, "account-agent").AttrOr("data-agent-id", ""); got == "" {
		t.Error("API-registered agent missing from the account")
	}
	tokenID := row.AttrOr("data-token-id", "")

	// Someone else cannot delete it.
	other := e.visitor()
	other.signup("bob", "password-bob")
	parsePage(t, other.postForm("/account/tokens/"+tokenID+"/delete", nil), http.StatusNotFound)
	parsePage(t, other.postForm("/account/tokens/not-a-number/delete", nil), http.StatusNotFound)

	// Delete: gone from the list, refused by the API.
	resp = e.postForm("/account/tokens/"+tokenID+"/delete", nil)
	wantStatus(t, resp, http.StatusSeeOther)
	doc = e.page("/account", http.StatusOK)
	mustTestid(t, doc, "tokens-empty")
	mustTestid(t, doc, "flash")
	wantStatus(t, e.do(http.MethodPost, "/api/v1/agents", simpleInput("api-bot-2", "API Bot 2"), bearer(token)...), http.StatusUnauthorized)
}
