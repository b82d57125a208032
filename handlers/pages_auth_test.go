package handlers

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

func TestSignupForm(t *testing.T) {
	e := newTestServer(t)
	e.signup("taken", "password-taken")

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
			v := e.visitor()
			doc := parsePage(t, v.postForm("/signup", tt.form), http.StatusUnprocessableEntity)
			for _, f := range tt.errors {
				mustTestid(t, doc, "error-"+f)
			}
			if got, _ := inputValue(doc, "handle"); got != tt.form.Get("handle") {
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
	v := e.visitor()
	resp := v.postForm("/signup", url.Values{"handle": {"Fresh"}, "password": {"long-enough"}, "password_confirm": {"long-enough"}, "next": {"/register"}})
	wantStatus(t, resp, http.StatusSeeOther)
	if loc := location(t, resp); loc != "/register" {
		t.Errorf("after signup: %q", loc)
	}
	doc := v.page("/register", http.StatusOK)
	if got := text(mustTestid(t, doc, "nav-account")); got != "@fresh" {
		t.Errorf("logged in as %q", got)
	}
	if got := text(mustTestid(t, doc, "flash")); !strings.Contains(got, "@fresh") {
		t.Errorf("flash = %q", got)
	}
	if doc := v.page("/", http.StatusOK); testid(doc, "flash").Length() != 0 {
		t.Error("flash shown twice")
	}
}

func TestLoginForm(t *testing.T) {
	e := newTestServer(t)
	e.signup("dana", "password-dana")
	anon := e.visitor()

	t.Run("wrong password", func(t *testing.T) {
		doc := parsePage(t, anon.postForm("/login", url.Values{"handle": {"dana"}, "password": {"nope-nope"}}), http.StatusUnauthorized)
		if got := text(mustTestid(t, doc, "form-error")); got != "Wrong handle or password." {
			t.Errorf("form-error = %q", got)
		}
		if got, _ := inputValue(doc, "handle"); got != "dana" {
			t.Errorf("handle kept as %q", got)
		}
		if _, ok := doc.Find("input[name=password]").Attr("value"); ok {
			t.Error("password rendered back")
		}
	})
	t.Run("unknown handle", func(t *testing.T) {
		doc := parsePage(t, anon.postForm("/login", url.Values{"handle": {"nobody"}, "password": {"whatever1"}}), http.StatusUnauthorized)
		mustTestid(t, doc, "form-error")
	})
	t.Run("empty", func(t *testing.T) {
		doc := parsePage(t, anon.postForm("/login", url.Values{}), http.StatusUnprocessableEntity)
		mustTestid(t, doc, "error-handle")
		mustTestid(t, doc, "error-password")
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
			v := e.visitor()
			resp := v.postForm("/login", url.Values{"handle": {"dana"}, "password": {"password-dana"}, "next": {tt.next}})
			wantStatus(t, resp, http.StatusSeeOther)
			if got := location(t, resp); got != tt.want {
				t.Errorf("next %q → %q, want %q", tt.next, got, tt.want)
			}
		})
	}

	// The login page carries ?next= into the form only when it is safe.
	doc := anon.page("/login?next=%2Faccount", http.StatusOK)
	if got, _ := inputValue(doc, "next"); got != "/account" {
		t.Errorf("next input = %q", got)
	}
	doc = anon.page("/login?next=%2F%2Fevil.example", http.StatusOK)
	if doc.Find("input[name=next]").Length() != 0 {
		t.Error("unsafe next kept in the form")
	}
}

func TestLoginRequiredAndLogout(t *testing.T) {
	e := newTestServer(t)
	for _, path := range []string{"/register", "/account", "/account/agents/" + strings.Repeat("a", 52) + "/edit"} {
		resp := e.do(http.MethodGet, path, nil)
		wantStatus(t, resp, http.StatusSeeOther)
		if got, want := location(t, resp), "/login?next="+url.QueryEscape(path); got != want {
			t.Errorf("%s → %q, want %q", path, got, want)
		}
	}
	// htmx gets a client-side redirect instead of a 303 it would follow.
	resp := e.do(http.MethodGet, "/account", nil, "HX-Request", "true")
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("HX-Redirect"), "/login?next=") {
		t.Errorf("htmx: status %d, HX-Redirect %q", resp.StatusCode, resp.Header.Get("HX-Redirect"))
	}

	e.signup("erin", "password-erin")
	e.page("/account", http.StatusOK)
	resp = e.postForm("/logout", url.Values{})
	wantStatus(t, resp, http.StatusSeeOther)
	doc := e.page("/", http.StatusOK)
	mustTestid(t, doc, "nav-login")
	if got := text(mustTestid(t, doc, "flash")); !strings.Contains(got, "logged out") {
		t.Errorf("flash = %q", got)
	}
	wantStatus(t, e.do(http.MethodGet, "/account", nil), http.StatusSeeOther)
	// Logging out is POST only.
	if resp := e.do(http.MethodGet, "/logout", nil); resp.StatusCode == http.StatusSeeOther {
		t.Error("GET /logout logs out")
	}
}
