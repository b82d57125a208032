package portal_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

func TestSignupForm(t *testing.T) {
	e := New(t)
	e.Signup("taken", "password-taken")

	tests := []struct {
		name   string
		form   url.Values
		errors []string // data-testid error-<field> expected
	}{
		{"duplicate handle", url.Values{"handle": {"Taken"}, "password": {"long-enough"}, "password_confirm": {"long-enough"}}, []string{"handle"}},
		{"bad handle", url.Values{"handle": {"no"}, "password": {"long-enough"}, "password_confirm": {"long-enough"}}, []string{"handle"}},
		{"short password", url.Values{"handle": {"newbie"}, "password": {"short"}, "password_confirm": {"short"}}, []string{"password"}},
		{"mismatch", url.Values{"handle": {"newbie"}, "password": {"long-enough"}, "password_confirm": {"long-enougH"}}, []string{"password_confirm"}},
		{"everything", url.Values{"handle": {"x"}, "password": {"a"}, "password_confirm": {"b"}}, []string{"handle", "password", "password_confirm"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := e.Visitor()
			doc := ParsePage(t, v.PostForm("/signup", tt.form), http.StatusUnprocessableEntity)
			for _, f := range tt.errors {
				MustTestid(t, doc, "error-"+f)
			}
			if got, _ := InputValue(doc, "handle"); got != tt.form.Get("handle") {
				t.Errorf("handle kept as %q, want %q", got, tt.form.Get("handle"))
			}
			doc.Find("input[type=password]").Each(func(_ int, s *goquery.Selection) {
				if _, ok := s.Attr("value"); ok {
					t.Error("a password is rendered back")
				}
			})
		})
	}

	// Success logs in and honours a safe next.
	v := e.Visitor()
	resp := v.PostForm("/signup", url.Values{"handle": {"Fresh"}, "password": {"long-enough"}, "password_confirm": {"long-enough"}, "next": {"/register"}})
	WantStatus(t, resp, http.StatusSeeOther)
	if loc := Location(t, resp); loc != "/register" {
		t.Errorf("after signup: %q", loc)
	}
	doc := v.Page("/register", http.StatusOK)
	if got := Text(MustTestid(t, doc, "nav-account")); got != "@fresh" {
		t.Errorf("logged in as %q", got)
	}
	if got := Text(MustTestid(t, doc, "flash")); !strings.Contains(got, "@fresh") {
		t.Errorf("flash = %q", got)
	}
	if doc := v.Page("/", http.StatusOK); Testid(doc, "flash").Length() != 0 {
		t.Error("flash shown twice")
	}
}

func TestLoginForm(t *testing.T) {
	e := New(t)
	e.Signup("dana", "password-dana")
	anon := e.Visitor()

	t.Run("wrong password", func(t *testing.T) {
		doc := ParsePage(t, anon.PostForm("/login", url.Values{"handle": {"dana"}, "password": {"nope-nope"}}), http.StatusUnauthorized)
		if got := Text(MustTestid(t, doc, "form-error")); got != "Wrong handle or password." {
			t.Errorf("form-error = %q", got)
		}
		if got, _ := InputValue(doc, "handle"); got != "dana" {
			t.Errorf("handle kept as %q", got)
		}
		if _, ok := doc.Find("input[name=password]").Attr("value"); ok {
			t.Error("password rendered back")
		}
	})
	t.Run("unknown handle", func(t *testing.T) {
		doc := ParsePage(t, anon.PostForm("/login", url.Values{"handle": {"nobody"}, "password": {"whatever1"}}), http.StatusUnauthorized)
		MustTestid(t, doc, "form-error")
	})
	t.Run("empty", func(t *testing.T) {
		doc := ParsePage(t, anon.PostForm("/login", url.Values{}), http.StatusUnprocessableEntity)
		MustTestid(t, doc, "error-handle")
		MustTestid(t, doc, "error-password")
	})

	nexts := []struct{ next, want string }{
		{"/account", "/account"},
		{"/agents?q=x", "/agents?q=x"},
		{"", "/"},
		{"//evil.example/x", "/"},
		{"/\\evil.example", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"account", "/"},
		{"/%0d%0aSet-Cookie:x", "/%0d%0aSet-Cookie:x"},
		{"/\r\nx", "/"},
	}
	for _, tt := range nexts {
		t.Run("next "+tt.next, func(t *testing.T) {
			v := e.Visitor()
			resp := v.PostForm("/login", url.Values{"handle": {"dana"}, "password": {"password-dana"}, "next": {tt.next}})
			WantStatus(t, resp, http.StatusSeeOther)
			if got := Location(t, resp); got != tt.want {
				t.Errorf("next %q → %q, want %q", tt.next, got, tt.want)
			}
		})
	}

	// The login page carries ?next= into the form only when it is safe.
	doc := anon.Page("/login?next=%2Faccount", http.StatusOK)
	if got, _ := InputValue(doc, "next"); got != "/account" {
		t.Errorf("next input = %q", got)
	}
	doc = anon.Page("/login?next=%2F%2Fevil.example", http.StatusOK)
	if doc.Find("input[name=next]").Length() != 0 {
		t.Error("unsafe next kept in the form")
	}
}

func TestLoginRequiredAndLogout(t *testing.T) {
	e := New(t)
	for _, path := range []string{"/register", "/account", "/account/agents/" + strings.Repeat("a", 52) + "/edit"} {
		resp := e.Do(http.MethodGet, path, nil)
		WantStatus(t, resp, http.StatusSeeOther)
		if got, want := Location(t, resp), "/login?next="+url.QueryEscape(path); got != want {
			t.Errorf("%s → %q, want %q", path, got, want)
		}
	}
	// htmx gets a client-side redirect instead of a 303 it would follow.
	resp := e.Do(http.MethodGet, "/account", nil, "HX-Request", "true")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("HX-Redirect"), "/login?next=") {
		t.Errorf("htmx: status %d, HX-Redirect %q", resp.StatusCode, resp.Header.Get("HX-Redirect"))
	}

	e.Signup("erin", "password-erin")
	e.Page("/account", http.StatusOK)
	resp = e.PostForm("/logout", url.Values{})
	WantStatus(t, resp, http.StatusSeeOther)
	doc := e.Page("/", http.StatusOK)
	MustTestid(t, doc, "nav-login")
	if got := Text(MustTestid(t, doc, "flash")); !strings.Contains(got, "logged out") {
		t.Errorf("flash = %q", got)
	}
	WantStatus(t, e.Do(http.MethodGet, "/account", nil), http.StatusSeeOther)
	// Logging out is POST only.
	if resp := e.Do(http.MethodGet, "/logout", nil); resp.StatusCode == http.StatusSeeOther {
		t.Error("GET /logout logs out")
	}
}

// TestLoginReason: an anonymous visitor sent from /register to /login is
// told why; a plain visit to /login gives no reason.
func TestLoginReason(t *testing.T) {
	e := New(t)
	resp := e.Do(http.MethodGet, "/register", nil)
	WantStatus(t, resp, http.StatusSeeOther)
	doc := e.Page(Location(t, resp), http.StatusOK)
	if got := Text(MustTestid(t, doc, "login-reason")); got != "Log in to register an agent." {
		t.Errorf("login reason = %q", got)
	}
	doc = e.Page("/login?next=%2Faccount%2Ftokens", http.StatusOK)
	if got := Text(MustTestid(t, doc, "login-reason")); got != "Log in to manage your API tokens." {
		t.Errorf("login reason for tokens = %q", got)
	}
	for _, path := range []string{"/login", "/login?next=%2Fagents", "/login?next=%2F%2Fevil.example%2Fregister"} {
		if Testid(e.Page(path, http.StatusOK), "login-reason").Length() != 0 {
			t.Errorf("%s: a reason is shown", path)
		}
	}
}
