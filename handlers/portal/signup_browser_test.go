package portal_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestBrowserSignupKeepsMismatchedPasswords: a sign-up whose repeated
// password differs is stopped in the browser, with what is wrong said
// under the field, and nothing typed is lost (the server's answer would clear
// both: it never sends a password back); once they match, it signs up.
func TestBrowserSignupKeepsMismatchedPasswords(t *testing.T) {
	path := ChromiumPath(t)
	e := New(t)
	b := NewBrowser(t, path, 60*time.Second)
	b.Do("type a mismatch and send",
		chromedp.Navigate(e.TS.URL+"/signup"), chromedp.WaitVisible(Tid("signup-form")),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true`),
		chromedp.SendKeys(chromedp.ID("handle"), "typist"),
		chromedp.SendKeys(chromedp.ID("password"), "long-enough-1"),
		chromedp.SendKeys(chromedp.ID("password-confirm"), "long-enough-2"),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
	)
	got := Run(b, "read the form", chromedp.Evaluate[[]string](`[String(window.__noReload === true),
		document.querySelector('#password').value, document.querySelector('#password-confirm').value,
		(document.querySelector('[data-testid="error-password_confirm"]') || {}).textContent || '']`))
	if got[0] != "true" || got[1] != "long-enough-1" || got[2] != "long-enough-2" || got[3] != "does not match the password: type it again" {
		t.Fatalf("after a mismatch: [no page load, password, repeat, message] = %q", got)
	}
	b.Do("fix the repeat and send",
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#password-confirm').value = ''`),
		chromedp.SendKeys(chromedp.ID("password-confirm"), "long-enough-1"),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
		chromedp.WaitVisible(Tid("nav-account")),
	)
	b.AssertClean("sign-up")
}
