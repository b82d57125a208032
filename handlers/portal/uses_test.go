package portal_test

import (
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestMostUsed: a card says how many conversations its host held with the
// agent this week (in words, with the plural right; nothing when none),
// and /agents sorts by it ("Most used"): the most used first, the unused
// after them.
func TestMostUsed(t *testing.T) {
	e := New(t)
	now := time.Now()
	uses := map[string]int{"busy-bot": 12, "once-bot": 1, "idle-bot": 0}
	ids := map[string]string{}
	for _, name := range []string{"busy-bot", "once-bot", "idle-bot"} { // idle is the newest
		id := e.SeedAgent("", SimpleInput(name, name, "uses")).Record.ID
		e.SetHealth(id, agent.Health{State: agent.HealthHealthy, SuccessRate: 1, CheckedAt: now, Uses7d: uses[name]})
		ids[name] = id
	}
	doc := e.Page("/agents?tag=uses&sort=used", 200)
	opt := doc.Find(`[data-testid="sort-select"] option[value="used"]`)
	if Text(opt) != "Most used" || opt.AttrOr("selected", "none") == "none" {
		t.Errorf("sort option used: %q, selected %q; want Most used, selected", Text(opt), opt.AttrOr("selected", "none"))
	}
	var order []string
	doc.Find(`[data-testid="agent-card"]`).Each(func(_ int, c *goquery.Selection) { order = append(order, c.AttrOr("data-agent-id", "")) })
	want := []string{ids["busy-bot"], ids["once-bot"], ids["idle-bot"]}
	if len(order) != 3 || order[0] != want[0] || order[1] != want[1] || order[2] != want[2] {
		t.Errorf("cards by use: %q, want %q", order, want)
	}
	for name, text := range map[string]string{"busy-bot": "12 conversations this week", "once-bot": "1 conversation this week", "idle-bot": ""} {
		card := doc.Find(`[data-testid="agent-card"][data-agent-id="` + ids[name] + `"]`)
		if got := Text(card.Find(`[data-testid="card-uses"]`)); got != text {
			t.Errorf("card of %s says %q, want %q", name, got, text)
		}
	}
}
