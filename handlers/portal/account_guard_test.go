package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// TestPasswordChangeRevokesTokens: a token made before a password change
// no longer works after it (401), the page says so and offers new ones,
// and a token made after it works.
func TestPasswordChangeRevokesTokens(t *testing.T) {
	e := New(t)
	old := e.UserToken("alice") // password-alice
	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("before-change"), Bearer(old)...), http.StatusCreated)
	e.Login("alice", "password-alice")

	resp := e.PostForm("/account/password", url.Values{
		"current_password": {"password-alice"}, "password": {"new-password-1"}, "password_confirm": {"new-password-1"},
	})
	WantStatus(t, resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/account#tokens" {
		t.Errorf("after the change: Location %q, want /account#tokens", loc)
	}
	doc := e.Page("/account", http.StatusOK)
	if flash := Text(MustTestid(t, doc, "flash")); !strings.Contains(flash, "API token is revoked") {
		t.Errorf("flash %q does not say the token is revoked", flash)
	}
	MustTestid(t, doc, "tokens-empty")
	MustTestid(t, doc, "token-form")

	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("after-change"), Bearer(old)...), http.StatusUnauthorized)

	WantStatus(t, e.PostForm("/account/tokens", url.Values{"name": {"laptop"}}), http.StatusSeeOther)
	fresh := Text(MustTestid(t, e.Page("/account/tokens", http.StatusOK), "new-token"))
	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("after-change"), Bearer(fresh)...), http.StatusCreated)
}

// TestDeletedHandleHeld: a handle whose account was just deleted is
// refused at sign-up with when it frees; one deleted 29 days ago still is;
// one deleted more than 30 days ago (the server's clock set back for the
// deletion) is free again.
func TestDeletedHandleHeld(t *testing.T) {
	e := New(t)
	real := e.Server.Now
	deleteAt := func(handle string, at time.Time) {
		t.Helper()
		b := e.Visitor()
		b.Signup(handle, "password-"+handle)
		e.Server.Now = func() time.Time { return at }
		defer func() { e.Server.Now = real }()
		WantStatus(t, b.PostForm("/account/delete", url.Values{"confirm_handle": {handle}, "delete_password": {"password-" + handle}}), http.StatusSeeOther)
	}
	signup := func(handle string) *http.Response {
		return e.Visitor().PostForm("/signup", url.Values{"handle": {handle}, "password": {"password-new"}, "password_confirm": {"password-new"}})
	}
	now := time.Now()

	deleteAt("bob", now)
	for _, h := range []string{"bob", "Bob"} {
		doc := ParsePage(t, signup(h), http.StatusUnprocessableEntity)
		msg := Text(MustTestid(t, doc, "error-handle"))
		until := now.Add(httpkit.HandleHold).UTC().Format("2 January 2006")
		if !strings.Contains(msg, "held until "+until) || !strings.Contains(msg, "choose another handle") {
			t.Errorf("sign-up as %s: %q, want when it frees (%s) and to choose another", h, msg, until)
		}
	}

	deleteAt("carol", now.Add(-29*24*time.Hour))
	ParsePage(t, signup("carol"), http.StatusUnprocessableEntity)

	deleteAt("dave", now.Add(-httpkit.HandleHold-time.Hour))
	WantStatus(t, signup("dave"), http.StatusSeeOther)
}

// TestLoginLimitPerAccount: guesses at one account from many addresses
// (each within its own per-IP budget) are held once the account's budget
// is spent, the right password too, with when to try again; another
// account is not; a minute later (the server's clock) the account logs in.
func TestLoginLimitPerAccount(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) {
		c.RateLimit = 3
		c.TrustedProxies = []string{"127.0.0.1/32", "::1/128"}
	})
	e.UserToken("alice")
	e.UserToken("carol")
	now := time.Now()
	e.Server.Now = func() time.Time { return now }
	ip := 0
	login := func(handle, password string) *http.Response {
		ip++ // a new address each time: the per-IP budget never runs out
		return e.Visitor().Do(http.MethodPost, "/login", url.Values{"handle": {handle}, "password": {password}}.Encode(),
			"Content-Type", "application/x-www-form-urlencoded", "Origin", e.TS.URL,
			"X-Forwarded-For", fmt.Sprintf("203.0.113.%d", ip))
	}
	for range 3 {
		WantStatus(t, login("alice", "wrong-password"), http.StatusUnauthorized)
	}
	for _, pw := range []string{"wrong-password", "password-alice"} {
		resp := login("Alice", pw)
		doc := ParsePage(t, resp, http.StatusTooManyRequests)
		if msg := Text(MustTestid(t, doc, "form-error")); !strings.Contains(msg, "@alice") || !strings.Contains(msg, "try again in 20 seconds") {
			t.Errorf("held login: %q, want the account and when to try again", msg)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "20" {
			t.Errorf("Retry-After %q, want 20", ra)
		}
	}
	WantStatus(t, login("carol", "password-carol"), http.StatusSeeOther)

	e.Server.Now = func() time.Time { return now.Add(time.Minute) }
	WantStatus(t, login("alice", "password-alice"), http.StatusSeeOther)
}

// TestFormsSayWhence: a state-changing form post that carries neither
// Origin nor Referer is refused with 403 and says why, whoever sends it;
// with either (a Referer of this site's pages) it passes, with a Referer
// of another site it is refused; the JSON API with a bearer token needs
// neither.
func TestFormsSayWhence(t *testing.T) {
	e := New(t)
	e.UserToken("alice")
	e.Login("alice", "password-alice")
	post := func(path string, vals url.Values, headers ...string) *http.Response {
		return e.Do(http.MethodPost, path, vals.Encode(), append([]string{"Content-Type", "application/x-www-form-urlencoded"}, headers...)...)
	}
	change := func(from, to string) url.Values {
		return url.Values{"current_password": {from}, "password": {to}, "password_confirm": {to}}
	}
	for _, tt := range []struct {
		path string
		vals url.Values
	}{
		{"/account/password", change("password-alice", "new-password-1")},
		{"/account/delete", url.Values{"confirm_handle": {"alice"}, "delete_password": {"password-alice"}}},
		{"/account/tokens", url.Values{"name": {"sneaky"}}},
		{"/logout", url.Values{}},
		{"/login", url.Values{"handle": {"alice"}, "password": {"password-alice"}}},
		{"/signup", url.Values{"handle": {"mallory"}, "password": {"password-m"}, "password_confirm": {"password-m"}}},
	} {
		doc := ParsePage(t, post(tt.path, tt.vals), http.StatusForbidden)
		if msg := doc.Text(); !strings.Contains(msg, "no Origin or Referer") {
			t.Errorf("POST %s without Origin or Referer: the page does not say why: %.300s", tt.path, strings.Join(strings.Fields(msg), " "))
		}
		ParsePage(t, post(tt.path, tt.vals, "Referer", "https://evil.example/page"), http.StatusForbidden)
	}
	if !signedIn(t, e) {
		t.Fatal("a refused logout or deletion signed the browser out")
	}
	if doc := e.Page("/account", http.StatusOK); Testid(doc, "token-row").Length() != 1 {
		t.Error("a refused post changed the account's tokens")
	}

	WantStatus(t, post("/account/password", change("password-alice", "new-password-1"), "Referer", e.TS.URL+"/account"), http.StatusSeeOther)
	WantStatus(t, post("/account/password", change("new-password-1", "new-password-2"), "Origin", e.TS.URL), http.StatusSeeOther)

	fresh := e.Visitor()
	fresh.Login("alice", "new-password-2")
	WantStatus(t, fresh.PostForm("/account/tokens", url.Values{"name": {"ci"}}), http.StatusSeeOther)
	token := Text(MustTestid(t, fresh.Page("/account/tokens", http.StatusOK), "new-token"))
	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("scripted"), Bearer(token)...), http.StatusCreated)
}
