package portal_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestBrowserPortalFlow drives the portal in a real headless chromium, as a
// person would: sign up, register an agent through the form, find it with
// the htmx live search, open it. It fails on any uncaught exception,
// console error or Content-Security-Policy violation the pages report.
func TestBrowserPortalFlow(t *testing.T) {
	path := ChromiumPath(t)
	started := time.Now()
	env := New(t)
	b := NewBrowser(t, path, 90*time.Second)
	base := env.TS.URL

	// Another agent, so that the live search has something to filter out.
	resp := env.Do("POST", "/api/v1/agents", map[string]any{
		"name": "weather-bot", "display_name": "Weather Bot",
		"description": "Forecasts for any city.", "tags": []string{"weather"},
		"backend": map[string]any{"kind": "builtin", "builtin": "echo"},
	}, "Authorization", "Bearer "+OperatorToken)
	WantStatus(t, resp, http.StatusCreated)

	// Sign up: the form logs the new account in.
	const handle, password = "browser-user", "correct horse battery"
	b.Do("open /signup", chromedp.Navigate(base+"/signup"), chromedp.WaitVisible(Tid("signup-form")))
	b.Do("sign up",
		chromedp.SendKeys(chromedp.ID("handle"), handle),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password-confirm"), password),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
		chromedp.WaitVisible(Tid("nav-account")),
	)
	if got := Run(b, "read nav-account", chromedp.Text(Tid("nav-account"))); !strings.Contains(got, "@"+handle) {
		t.Errorf("after sign-up the nav shows %q, want @%s", got, handle)
	}
	b.AssertClean("sign-up")

	// Register an agent through the form. The description carries markup,
	// which must come back as text.
	const description = "Says back what you send. <b>not bold</b> stays text."
	b.Do("open /register", chromedp.Navigate(base+"/register"), chromedp.WaitVisible(Tid("agent-form")))
	b.Do("fill the agent form",
		chromedp.SendKeys(chromedp.ID("name"), "browser-bot"),
		chromedp.SendKeys(chromedp.ID("display_name"), "Browser Bot"),
		chromedp.SendKeys(chromedp.ID("description"), description),
		chromedp.SendKeys(chromedp.ID("tags"), "browser, e2e"),
		chromedp.SendKeys(chromedp.ID("skill-0-name"), "Repeat after me"),
	)
	// The skill's ID follows its name as it is typed.
	if got := Run(b, "read the skill id", chromedp.Value(chromedp.ID("skill-0-id"))); got != "repeat-after-me" {
		t.Errorf("skill id made from the name = %q, want repeat-after-me", got)
	}
	b.Do("choose the backend and submit",
		chromedp.SetValue(chromedp.ID("backend-kind"), "builtin"),
		chromedp.SetValue(chromedp.ID("backend-builtin"), "echo"),
		chromedp.Click(Tid("agent-form-submit")),
		chromedp.WaitVisible(Tid("agent-detail")),
	)
	id := Run(b, "read the agent id", chromedp.AttributeValue(Tid("agent-detail"), "data-agent-id")).Value
	if id == "" {
		t.Fatal("agent page: agent-detail has no data-agent-id")
	}
	loc := Run(b, "read the location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/agents/"+id {
		t.Errorf("after registering the browser is at %s, want /agents/%s", loc, id)
	}
	if got := Run(b, "read the flash", chromedp.Text(Tid("flash"))); !strings.Contains(got, "Browser Bot") {
		t.Errorf("flash = %q, want it to name Browser Bot", got)
	}
	if got := Run(b, "read the description", chromedp.Text(Tid("agent-description"))); !strings.Contains(got, "<b>not bold</b>") {
		t.Errorf("description text = %q, want the literal <b>not bold</b>", got)
	}
	if n := Run(b, "count <b> in the description", chromedp.Evaluate[int](
		`document.querySelectorAll('[data-testid="agent-description"] b').length`)); n != 0 {
		t.Errorf("description holds %d <b> element(s): markup was not escaped", n)
	}
	b.AssertClean("register")

	// Live search: typing runs htmx's debounced GET, swaps #results and
	// pushes the URL, with no page load (the marker survives).
	b.Do("open /agents",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(Tid("search-input")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="results"] [data-testid="agent-card"]`)),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true`),
	)
	if n := Run(b, "count cards", chromedp.Evaluate[int](
		`document.querySelectorAll('[data-testid="results"] [data-testid="agent-card"]').length`)); n != 2 {
		t.Errorf("/agents shows %d agent cards before the search, want 2", n)
	}
	card := fmt.Sprintf(`[data-testid="results"] [data-testid="agent-card"][data-agent-id=%q]`, id)
	b.Do("live search for brows",
		chromedp.SendKeys(Tid("search-input"), "brows"),
		chromedp.PollFunction[chromedp.Void](`(id) => {
			const cards = document.querySelectorAll('[data-testid="results"] [data-testid="agent-card"]');
			return cards.length === 1 && cards[0].dataset.agentId === id &&
				location.search === "?q=brows";
		}`, chromedp.WithPollingArgs(id), chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	if !Run(b, "check for a page load", chromedp.Evaluate[bool](`window.__noReload === true`)) {
		t.Error("the search reloaded the page: want htmx to swap #results in place")
	}
	if got := Run(b, "read the search box", chromedp.Value(Tid("search-input"))); got != "brows" {
		t.Errorf("search box = %q after the swap, want brows", got)
	}
	b.AssertClean("live search")

	b.Do("open the agent from the results",
		chromedp.Click(chromedp.CSS(card+` [data-testid="agent-link"]`)),
		chromedp.WaitVisible(Tid("agent-detail")),
	)
	loc = Run(b, "read the location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/agents/"+id {
		t.Errorf("the result link led to %s, want /agents/%s", loc, id)
	}
	if got := Run(b, "read the display name", chromedp.Text(Tid("agent-display-name"))); got != "Browser Bot" {
		t.Errorf("display name = %q, want Browser Bot", got)
	}
	tags := Run(b, "read the tags", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('[data-testid="agent-tags"] [data-testid="tag"]'), e => e.textContent.trim())`))
	if !slices.Equal(tags, []string{"browser", "e2e"}) {
		t.Errorf("tags = %q, want [browser e2e]", tags)
	}
	skill := Run(b, "read the skill", chromedp.Text(chromedp.CSS(`[data-testid="skill"][data-skill-id="repeat-after-me"]`)))
	if !strings.Contains(skill, "Repeat after me") {
		t.Errorf("skill = %q, want it to show Repeat after me", skill)
	}
	if path, err := b.Screenshot(b.Ctx, "agent.png"); err != nil {
		t.Errorf("screenshot of the agent page: %v", err)
	} else {
		t.Logf("agent page screenshot: %s", path)
	}
	b.AssertClean("agent page")

	// A search that matches nothing shows the empty state.
	b.Do("open /agents",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(Tid("search-input")),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true`),
	)
	b.Do("live search for nothing",
		chromedp.SendKeys(Tid("search-input"), "qqqzzz"),
		chromedp.PollFunction[chromedp.Void](`() =>
			document.querySelector('[data-testid="results"] [data-testid="results-empty"]') !== null &&
			document.querySelector('[data-testid="results"] [data-testid="agent-card"]') === null &&
			new URLSearchParams(location.search).get("q") === "qqqzzz"`,
			chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.WaitVisible(Tid("results-empty")),
	)
	if !Run(b, "check for a page load", chromedp.Evaluate[bool](`window.__noReload === true`)) {
		t.Error("the empty search reloaded the page: want htmx to swap #results in place")
	}
	if got := Run(b, "read the empty state", chromedp.Text(Tid("results-empty"))); !strings.Contains(got, "No agents match") {
		t.Errorf("empty state = %q, want No agents match", got)
	}
	b.AssertClean("empty search")

	// A full-page screenshot of the catalogue.
	b.Do("open /agents",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	shot, err := b.Screenshot(b.Ctx, "agents.png")
	if err != nil {
		t.Fatalf("screenshot of /agents: %v", err)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Errorf("screenshot %s: %v (empty?)", shot, err)
	}
	t.Logf("/agents screenshot: %s", shot)
	b.AssertClean("/agents")
	t.Logf("browser flow took %v", time.Since(started).Round(time.Millisecond))
}

// TestBrowserCSPDetector checks the detector TestBrowserPortalFlow relies
// on: a page under the portal's own Content-Security-Policy that breaks it
// (inline script, inline style, inline handler) and throws must be caught.
// Without this, a silent detector would make the flow test pass vacuously.
func TestBrowserCSPDetector(t *testing.T) {
	path := ChromiumPath(t)
	ts := newCanaryServer(t, servedCSP(t))
	b := NewBrowser(t, path, 60*time.Second)

	b.Do("open the canary page",
		chromedp.Navigate(ts+"/"),
		chromedp.WaitVisible(chromedp.ID("ready")),
	)
	// Wait until both kinds of report have arrived: a CSP violation and the
	// exception thrown by the (allowed) external script.
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = append(got, b.TakeProblems()...)
		csp := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "CSP violation") })
		exc := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "canary exception") })
		if csp && exc {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the detector missed a CSP violation (%v) or the exception (%v); it reported: %q", csp, exc, got)
		}
		if _, err := chromedp.Run(b.Ctx, chromedp.Evaluate[int](`1`)); err != nil { // a round trip lets events in
			t.Fatal(err)
		}
	}
	if ran := Run(b, "check the inline script", chromedp.Evaluate[bool](`window.inlineRan === true`)); ran {
		t.Error("the inline script ran: the CSP did not hold")
	}
	for _, p := range got {
		t.Logf("detected: %s", p)
	}
}

// servedCSP is the Content-Security-Policy the portal sends with its pages.
func servedCSP(t *testing.T) string {
	t.Helper()
	resp := New(t).Do(http.MethodGet, "/", nil)
	WantStatus(t, resp, http.StatusOK)
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("the portal's CSP %q does not restrict scripts", csp)
	}
	return csp
}

// newCanaryServer serves a page that violates csp.
func newCanaryServer(t *testing.T, csp string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>canary</title>
<script>window.inlineRan = true</script>
<script src="/throw.js"></script>
</head><body>
<p style="color: red">inline style</p>
<button onclick="alert(1)">inline handler</button>
<p id="ready">ready</p>
</body></html>`)
	})
	mux.HandleFunc("/throw.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		fmt.Fprint(w, `throw new Error("canary exception");`)
	})
	mux.HandleFunc("/favicon.ico", http.NotFound)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}
