package handlers

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
)

// TestBrowserPortalFlow drives the portal in a real headless chromium, as a
// person would: sign up, register an agent through the form, find it with
// the htmx live search, open it. It fails on any uncaught exception,
// console error or Content-Security-Policy violation the pages report.
func TestBrowserPortalFlow(t *testing.T) {
	path := chromiumPath(t)
	started := time.Now()
	env := newTestServer(t)
	b := newBrowser(t, path, 90*time.Second)
	base := env.ts.URL

	// Another agent, so that the live search has something to filter out.
	resp := env.do("POST", "/api/v1/agents", map[string]any{
		"name": "weather-bot", "display_name": "Weather Bot",
		"description": "Forecasts for any city.", "tags": []string{"weather"},
		"backend": map[string]any{"kind": "builtin", "builtin": "echo"},
	}, "Authorization", "Bearer "+testOperatorToken)
	wantStatus(t, resp, http.StatusCreated)

	// Sign up: the form logs the new account in.
	const handle, password = "browser-user", "correct horse battery"
	b.do("open /signup", chromedp.Navigate(base+"/signup"), chromedp.WaitVisible(tid("signup-form")))
	b.do("sign up",
		chromedp.SendKeys(chromedp.ID("handle"), handle),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password-confirm"), password),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
		chromedp.WaitVisible(tid("nav-account")),
	)
	if got := run(b, "read nav-account", chromedp.Text(tid("nav-account"))); !strings.Contains(got, "@"+handle) {
		t.Errorf("after sign-up the nav shows %q, want @%s", got, handle)
	}
	b.assertClean("sign-up")

	// Register an agent through the form. The description carries markup,
	// which must come back as text.
	const description = "Says back what you send. <b>not bold</b> stays text."
	b.do("open /register", chromedp.Navigate(base+"/register"), chromedp.WaitVisible(tid("agent-form")))
	b.do("fill and submit the agent form",
		chromedp.SendKeys(chromedp.ID("name"), "browser-bot"),
		chromedp.SendKeys(chromedp.ID("display_name"), "Browser Bot"),
		chromedp.SendKeys(chromedp.ID("description"), description),
		chromedp.SendKeys(chromedp.ID("tags"), "browser, e2e"),
		chromedp.SendKeys(chromedp.ID("skill-0-id"), "repeat"),
		chromedp.SendKeys(chromedp.ID("skill-0-name"), "Repeat after me"),
		chromedp.SetValue(chromedp.ID("backend-kind"), "builtin"),
		chromedp.SetValue(chromedp.ID("backend-builtin"), "echo"),
		chromedp.Click(chromedp.CSS(`[data-testid="agent-form"] button[type="submit"]`)),
		chromedp.WaitVisible(tid("agent-detail")),
	)
	id := run(b, "read the agent id", chromedp.AttributeValue(tid("agent-detail"), "data-agent-id")).Value
	if id == "" {
		t.Fatal("agent page: agent-detail has no data-agent-id")
	}
	loc := run(b, "read the location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/agents/"+id {
		t.Errorf("after registering the browser is at %s, want /agents/%s", loc, id)
	}
	if got := run(b, "read the flash", chromedp.Text(tid("flash"))); !strings.Contains(got, "Browser Bot") {
		t.Errorf("flash = %q, want it to name Browser Bot", got)
	}
	if got := run(b, "read the description", chromedp.Text(tid("agent-description"))); !strings.Contains(got, "<b>not bold</b>") {
		t.Errorf("description text = %q, want the literal <b>not bold</b>", got)
	}
	if n := run(b, "count <b> in the description", chromedp.Evaluate[int](
		`document.querySelectorAll('[data-testid="agent-description"] b').length`)); n != 0 {
		t.Errorf("description holds %d <b> element(s): markup was not escaped", n)
	}
	b.assertClean("register")

	// Live search: typing runs htmx's debounced GET, swaps #results and
	// pushes the URL, with no page load (the marker survives).
	b.do("open /agents",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(tid("search-input")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="results"] [data-testid="agent-card"]`)),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true`),
	)
	if n := run(b, "count cards", chromedp.Evaluate[int](
		`document.querySelectorAll('[data-testid="results"] [data-testid="agent-card"]').length`)); n != 2 {
		t.Errorf("/agents shows %d agent cards before the search, want 2", n)
	}
	card := fmt.Sprintf(`[data-testid="results"] [data-testid="agent-card"][data-agent-id=%q]`, id)
	b.do("live search for brows",
		chromedp.SendKeys(tid("search-input"), "brows"),
		chromedp.PollFunction[chromedp.Void](`(id) => {
			const cards = document.querySelectorAll('[data-testid="results"] [data-testid="agent-card"]');
			return cards.length === 1 && cards[0].dataset.agentId === id &&
				new URLSearchParams(location.search).get("q") === "brows";
		}`, chromedp.WithPollingArgs(id), chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	if !run(b, "check for a page load", chromedp.Evaluate[bool](`window.__noReload === true`)) {
		t.Error("the search reloaded the page: want htmx to swap #results in place")
	}
	if got := run(b, "read the search box", chromedp.Value(tid("search-input"))); got != "brows" {
		t.Errorf("search box = %q after the swap, want brows", got)
	}
	b.assertClean("live search")

	b.do("open the agent from the results",
		chromedp.Click(chromedp.CSS(card+` [data-testid="agent-link"]`)),
		chromedp.WaitVisible(tid("agent-detail")),
	)
	loc = run(b, "read the location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/agents/"+id {
		t.Errorf("the result link led to %s, want /agents/%s", loc, id)
	}
	if got := run(b, "read the display name", chromedp.Text(tid("agent-display-name"))); got != "Browser Bot" {
		t.Errorf("display name = %q, want Browser Bot", got)
	}
	tags := run(b, "read the tags", chromedp.Evaluate[[]string](
		`Array.from(document.querySelectorAll('[data-testid="agent-tags"] [data-testid="tag"]'), e => e.textContent.trim())`))
	if !slices.Equal(tags, []string{"browser", "e2e"}) {
		t.Errorf("tags = %q, want [browser e2e]", tags)
	}
	skill := run(b, "read the skill", chromedp.Text(chromedp.CSS(`[data-testid="skill"][data-skill-id="repeat"]`)))
	if !strings.Contains(skill, "Repeat after me") {
		t.Errorf("skill = %q, want it to show Repeat after me", skill)
	}
	if path, err := b.screenshot(b.ctx, "agent.png"); err != nil {
		t.Errorf("screenshot of the agent page: %v", err)
	} else {
		t.Logf("agent page screenshot: %s", path)
	}
	b.assertClean("agent page")

	// A search that matches nothing shows the empty state.
	b.do("open /agents",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(tid("search-input")),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true`),
	)
	b.do("live search for nothing",
		chromedp.SendKeys(tid("search-input"), "qqqzzz"),
		chromedp.PollFunction[chromedp.Void](`() =>
			document.querySelector('[data-testid="results"] [data-testid="results-empty"]') !== null &&
			document.querySelector('[data-testid="results"] [data-testid="agent-card"]') === null &&
			new URLSearchParams(location.search).get("q") === "qqqzzz"`,
			chromedp.WithPollingTimeout(15*time.Second)),
		chromedp.WaitVisible(tid("results-empty")),
	)
	if !run(b, "check for a page load", chromedp.Evaluate[bool](`window.__noReload === true`)) {
		t.Error("the empty search reloaded the page: want htmx to swap #results in place")
	}
	if got := run(b, "read the empty state", chromedp.Text(tid("results-empty"))); !strings.Contains(got, "No agents match") {
		t.Errorf("empty state = %q, want No agents match", got)
	}
	b.assertClean("empty search")

	// A full-page screenshot of the catalogue.
	b.do("open /agents",
		chromedp.Navigate(base+"/agents"),
		chromedp.WaitVisible(chromedp.CSS(card)),
	)
	shot, err := b.screenshot(b.ctx, "agents.png")
	if err != nil {
		t.Fatalf("screenshot of /agents: %v", err)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Errorf("screenshot %s: %v (empty?)", shot, err)
	}
	t.Logf("/agents screenshot: %s", shot)
	b.assertClean("/agents")
	t.Logf("browser flow took %v", time.Since(started).Round(time.Millisecond))
}

// TestBrowserCSPDetector checks the detector TestBrowserPortalFlow relies
// on: a page under the portal's own Content-Security-Policy that breaks it
// (inline script, inline style, inline handler) and throws must be caught.
// Without this, a silent detector would make the flow test pass vacuously.
func TestBrowserCSPDetector(t *testing.T) {
	path := chromiumPath(t)
	ts := newCanaryServer(t)
	b := newBrowser(t, path, 60*time.Second)

	b.do("open the canary page",
		chromedp.Navigate(ts+"/"),
		chromedp.WaitVisible(chromedp.ID("ready")),
	)
	// Wait until both kinds of report have arrived: a CSP violation and the
	// exception thrown by the (allowed) external script.
	var got []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		got = append(got, b.takeProblems()...)
		csp := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "CSP violation") })
		exc := slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "canary exception") })
		if csp && exc {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the detector missed a CSP violation (%v) or the exception (%v); it reported: %q", csp, exc, got)
		}
		if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`1`)); err != nil { // a round trip lets events in
			t.Fatal(err)
		}
	}
	if ran := run(b, "check the inline script", chromedp.Evaluate[bool](`window.inlineRan === true`)); ran {
		t.Error("the inline script ran: the CSP did not hold")
	}
	for _, p := range got {
		t.Logf("detected: %s", p)
	}
}

// newCanaryServer serves a page that violates contentSecurityPolicy.
func newCanaryServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
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
