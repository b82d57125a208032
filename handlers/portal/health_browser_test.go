package portal_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestBrowserHealthBadge: in a real chromium the agent page shows the
// health badge with its latency and last answer, and the badge on the page
// and on a search card (above the card's stretched link) leads to the
// explanation of its word.
func TestBrowserHealthBadge(t *testing.T) {
	path := ChromiumPath(t)
	e := New(t)
	b := NewBrowser(t, path, 90*time.Second)
	now := time.Now()
	id := e.SeedAgent("", SimpleInput("weather-bot", "Weather Bot", "weather")).Record.ID
	e.SetHealth(id, agent.Health{State: agent.HealthHealthy, LatencyMS: 120, SuccessRate: 1, LastOKAt: now.Add(-3 * time.Minute), CheckedAt: now})

	b.Do("open the agent page", chromedp.Navigate(e.TS.URL+"/agents/"+id), chromedp.WaitVisible(Tid("health-badge")))
	line := Run(b, "read the health line", chromedp.Text(Tid("health")))
	for _, want := range []string{"Available", "~120 ms", "last answered 3 min ago"} {
		if !strings.Contains(line, want) {
			t.Errorf("health line %q lacks %q", line, want)
		}
	}
	b.AssertClean("agent page")
	followBadge(t, b, Tid("health-badge"), Tid("agent-detail"), "healthy")

	card := `[data-testid="agent-card"][data-agent-id="` + id + `"] `
	b.Do("open the search page", chromedp.Navigate(e.TS.URL+"/agents"), chromedp.WaitVisible(chromedp.CSS(card+`[data-testid="agent-status"]`)))
	b.AssertClean("search page")
	followBadge(t, b, chromedp.CSS(card+`[data-testid="agent-status"]`), Tid("search-form"), "healthy")
}

// followBadge clicks a badge and checks that the browser lands on the
// explanation of word. Until the help page exists the landing is its 404,
// and only the address is checked.
func followBadge(t *testing.T, b *Browser, badge, leaving chromedp.CSS, word string) {
	t.Helper()
	b.Do("click the "+word+" badge", chromedp.Click(badge), chromedp.WaitNotPresent(leaving), chromedp.WaitVisible(Tid("main")))
	loc := Run(b, "read the location", chromedp.Location())
	if u, err := url.Parse(loc); err != nil || u.Path != "/help/status" || u.Fragment != word {
		t.Fatalf("the %s badge led to %s, want /help/status#%s", word, loc, word)
	}
	if Run(b, "look for an error page", chromedp.Evaluate[bool](`document.querySelector('[data-testid="error-page"]') !== null`)) {
		t.Logf("/help/status is not on this branch yet: only the badge's address is checked")
		return
	}
	if !Run(b, "look for the "+word+" anchor", chromedp.Evaluate[bool](`document.getElementById(`+"`"+word+"`"+`) !== null`)) {
		t.Errorf("/help/status has no #%s to explain the badge", word)
	}
}
