package portal_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/agentsite/agentsite/agent/chat"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// signedIn reports whether the env's browser is signed in (the account
// page answers, not a redirect to log in).
func signedIn(t *testing.T, e *Env) bool {
	t.Helper()
	resp := e.Do(http.MethodGet, "/account", nil)
	return resp.StatusCode == http.StatusOK
}

// TestChangePassword: wrong fields say which and focus the first wrong
// one, no password is rendered back; a cross-site post is refused; a
// change keeps this session, signs the account's other sessions out, and
// only the new password logs in.
func TestChangePassword(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	other := e.Visitor()
	other.Login("alice", "password-alice")
	if !signedIn(t, other) {
		t.Fatal("the second browser is not signed in")
	}

	for _, tt := range []struct {
		name                   string
		current, next, confirm string
		errs                   []string
		focus                  string
	}{
		{"wrong current", "nope-nope", "new-password-1", "new-password-1", []string{"current_password"}, "current-password"},
		{"mismatch", "password-alice", "new-password-1", "new-password-2", []string{"password_confirm"}, "new-password"},
		{"too short", "password-alice", "short", "short", []string{"password"}, "new-password"},
		{"both", "nope-nope", "new-password-1", "other-one-22", []string{"current_password", "password_confirm"}, "current-password"},
	} {
		doc := ParsePage(t, e.PostForm("/account/password", url.Values{
			"current_password": {tt.current}, "password": {tt.next}, "password_confirm": {tt.confirm},
		}), http.StatusUnprocessableEntity)
		for _, k := range tt.errs {
			MustTestid(t, doc, "error-"+k)
		}
		if got := doc.Find("[autofocus]"); got.Length() != 1 || got.AttrOr("id", "") != tt.focus {
			t.Errorf("%s: focus on %q (%d autofocus), want #%s", tt.name, got.AttrOr("id", ""), got.Length(), tt.focus)
		}
		if n := doc.Find(`input[type="password"][value]`).Length(); n != 0 {
			t.Errorf("%s: %d password fields rendered with a value", tt.name, n)
		}
	}

	// A cross-site form post is refused before the handler: nothing changes.
	resp := e.Do(http.MethodPost, "/account/password", url.Values{
		"current_password": {"password-alice"}, "password": {"evil-password"}, "password_confirm": {"evil-password"},
	}.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site password change: %d, want 403", resp.StatusCode)
	}
	if !signedIn(t, other) {
		t.Fatal("a refused change signed the other browser out")
	}

	resp = e.PostForm("/account/password", url.Values{
		"current_password": {"password-alice"}, "password": {"new-password-1"}, "password_confirm": {"new-password-1"},
	})
	WantStatus(t, resp, http.StatusSeeOther)
	if !signedIn(t, e) {
		t.Error("the browser that changed the password was signed out")
	}
	if signedIn(t, other) {
		t.Error("the account's other session still works after the password changed")
	}
	if resp := e.Visitor().PostForm("/login", url.Values{"handle": {"alice"}, "password": {"password-alice"}}); resp.StatusCode == http.StatusSeeOther {
		t.Error("the old password still logs in")
	}
	fresh := e.Visitor()
	fresh.Login("alice", "new-password-1")
	if !signedIn(t, fresh) {
		t.Error("the new password does not log in")
	}
}

// TestDeleteAccount: a wrong handle or password keeps what was typed (but
// the password) and deletes nothing; a cross-site post is refused; the
// deletion removes the account's agents, API tokens and conversations,
// ends every session of it, and leaves other accounts alone.
func TestDeleteAccount(t *testing.T) {
	e := New(t)
	token := e.UserToken("alice") // makes alice, password-alice
	mine := e.SeedAgent("alice", SimpleInput("alice-bot", "Alice Bot")).Record.ID
	e.Login("alice", "password-alice")
	theirs := e.SeedAgent("bob", SimpleInput("bob-bot", "Bob Bot")).Record.ID
	other := e.Visitor()
	other.Login("alice", "password-alice")
	alice, err := e.Store.GetUserByHandle(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	owner := string(chat.UserOwner(alice.ID))
	if _, err := e.Store.CreateConversation(context.Background(), store.Conversation{ID: "conv-alice", AgentID: mine, OwnerKey: owner}); err != nil {
		t.Fatal(err)
	}

	doc := ParsePage(t, e.PostForm("/account/delete", url.Values{"confirm_handle": {"alicia"}, "delete_password": {"password-alice"}}), http.StatusUnprocessableEntity)
	MustTestid(t, doc, "error-confirm_handle")
	if v, _ := InputValue(doc, "confirm_handle"); v != "alicia" {
		t.Errorf("typed handle not kept: %q", v)
	}
	if got := doc.Find("[autofocus]").AttrOr("id", ""); got != "confirm-handle" {
		t.Errorf("focus on %q, want the handle", got)
	}
	doc = ParsePage(t, e.PostForm("/account/delete", url.Values{"confirm_handle": {"alice"}, "delete_password": {"wrong-one"}}), http.StatusUnprocessableEntity)
	MustTestid(t, doc, "error-delete_password")
	resp := e.Do(http.MethodPost, "/account/delete", url.Values{"confirm_handle": {"alice"}, "delete_password": {"password-alice"}}.Encode(),
		"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site deletion: %d, want 403", resp.StatusCode)
	}
	if _, err := e.Store.GetUserByID(context.Background(), alice.ID); err != nil {
		t.Fatalf("refused deletions deleted the account: %v", err)
	}

	resp = e.PostForm("/account/delete", url.Values{"confirm_handle": {"@Alice"}, "delete_password": {"password-alice"}})
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != "/" {
		t.Errorf("after the deletion the browser goes to %q", got)
	}
	if _, err := e.Store.GetUserByID(context.Background(), alice.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("account still there: %v", err)
	}
	if l, err := e.Store.GetAgent(context.Background(), mine); err == nil && !l.Record.Tombstone {
		t.Errorf("alice's agent is still listed: %+v", l.Status)
	}
	if l, err := e.Store.GetAgent(context.Background(), theirs); err != nil || l.Record.Tombstone {
		t.Errorf("bob's agent went too: %v", err)
	}
	if cs, err := e.Store.ListConversations(context.Background(), owner, 10); err != nil || len(cs) != 0 {
		t.Errorf("alice's conversations: %v, %v", cs, err)
	}
	for name, env := range map[string]*Env{"this browser": e, "the other browser": other} {
		if signedIn(t, env) {
			t.Errorf("%s is still signed in", name)
		}
	}
	if resp := e.Do(http.MethodPost, "/api/v1/agents", SimpleInput("late-bot", "Late Bot"), "Authorization", "Bearer "+token); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("alice's API token answers %d, want 401", resp.StatusCode)
	}
	if resp := e.Visitor().PostForm("/login", url.Values{"handle": {"alice"}, "password": {"password-alice"}}); resp.StatusCode == http.StatusSeeOther {
		t.Error("the deleted account still logs in")
	}
}
