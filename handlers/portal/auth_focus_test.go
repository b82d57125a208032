package portal_test

import (
	"net/http"
	"net/url"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestSignupFocus: the sign-up form comes back with the focus where to
// type first: the handle when it is wrong, else the first password field
// (both are empty again after a mismatch, and the message says to type
// both); the handle typed is kept.
func TestSignupFocus(t *testing.T) {
	e := New(t)
	for _, tt := range []struct {
		name  string
		form  url.Values
		focus string
	}{
		{"mismatch", url.Values{"handle": {"newbie"}, "password": {"long-enough"}, "password_confirm": {"long-enougH"}}, "password"},
		{"bad handle and mismatch", url.Values{"handle": {"x"}, "password": {"long-enough"}, "password_confirm": {"nope-nope-1"}}, "handle"},
		{"short password", url.Values{"handle": {"newbie"}, "password": {"short"}, "password_confirm": {"short"}}, "password"},
	} {
		doc := ParsePage(t, e.PostForm("/signup", tt.form), http.StatusUnprocessableEntity)
		if got := doc.Find("[autofocus]"); got.Length() != 1 || got.AttrOr("id", "") != tt.focus {
			t.Errorf("%s: focus on %q (%d autofocus), want #%s", tt.name, got.AttrOr("id", ""), got.Length(), tt.focus)
		}
		if v, _ := InputValue(doc, "handle"); v != tt.form.Get("handle") {
			t.Errorf("%s: handle %q not kept (%q)", tt.name, tt.form.Get("handle"), v)
		}
	}
	doc := ParsePage(t, e.PostForm("/signup", url.Values{"handle": {"newbie"}, "password": {"long-enough"}, "password_confirm": {"long-enougH"}}), http.StatusUnprocessableEntity)
	if got := Text(MustTestid(t, doc, "error-password_confirm")); got != "does not match the password: type both again" {
		t.Errorf("mismatch message %q", got)
	}
}
