package portal_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestBrowserTestBackend: in a real chromium, the register form's Test
// backend button, for a webhook whose port refuses connections, shows the
// probe's error under the backend settings without leaving the page or
// losing what was typed, and breaks no CSP rule.
func TestBrowserTestBackend(t *testing.T) {
	path := ChromiumPath(t)
	e := New(t)
	e.AllowPrivateEndpoints()
	UseHealth(e)
	refused, hostPort := RefusingURL(t, "/hook")
	b := NewBrowser(t, path, 60*time.Second)
	base := e.TS.URL

	const handle, password = "tester", "correct horse battery"
	b.Do("sign up", chromedp.Navigate(base+"/signup"), chromedp.WaitVisible(Tid("signup-form")),
		chromedp.SendKeys(chromedp.ID("handle"), handle),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password-confirm"), password),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
		chromedp.WaitVisible(Tid("nav-account")),
	)
	b.Do("fill the register form with a refusing webhook", chromedp.Navigate(base+"/register"), chromedp.WaitVisible(Tid("agent-form")),
		chromedp.SendKeys(chromedp.ID("name"), "hook-bot"),
		chromedp.SetValue(chromedp.ID("backend-kind"), "webhook"),
		chromedp.WaitVisible(chromedp.ID("backend-url")),
		chromedp.SendKeys(chromedp.ID("backend-url"), refused),
	)
	// A mark on the page that a reload (the no-JS path) would wipe.
	b.Do("mark the page", chromedp.Evaluate[chromedp.Void](`document.body.dataset.marked = "yes"`))
	b.Do("click Test backend", chromedp.Click(Tid("test-backend")), chromedp.WaitVisible(Tid("backend-test-result")))
	marked := Run(b, "read the mark", chromedp.Evaluate[bool](`document.body.dataset.marked === "yes"`))
	if !marked {
		t.Error("the page was reloaded: htmx did not swap the result in")
	}
	if got := Run(b, "read the result", chromedp.Text(Tid("backend-test-result"))); !strings.Contains(got, "connection refused at "+hostPort) {
		t.Errorf("Test backend shows %q, want connection refused at %s", got, hostPort)
	}
	loc := Run(b, "read the location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/register" {
		t.Errorf("after the test the browser is at %s, want /register", loc)
	}
	if got := Run(b, "read the name", chromedp.Value(chromedp.ID("name"))); got != "hook-bot" {
		t.Errorf("name = %q after the test, want what was typed", got)
	}
	b.AssertClean("test backend")
}
