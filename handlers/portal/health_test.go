package portal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// seedHealth registers one agent per health state (its name is the state)
// and records that state as this node's heartbeat would; the healthy one
// answers in 120 ms and last answered 3 minutes ago.
func seedHealth(e *Env) map[string]string {
	now := time.Now()
	ids := map[string]string{}
	for _, st := range []string{agent.HealthHealthy, agent.HealthDegraded, agent.HealthFailing, agent.HealthUnknown} {
		id := e.SeedAgent("", SimpleInput(st+"-bot", strings.ToUpper(st[:1])+st[1:]+" Bot", "health")).Record.ID
		h := agent.Health{State: st, CheckedAt: now}
		switch st {
		case agent.HealthHealthy:
			h.LatencyMS, h.SuccessRate, h.LastOKAt = 120, 1, now.Add(-3*time.Minute)
		case agent.HealthDegraded:
			h.LatencyMS, h.SuccessRate, h.LastOKAt = 6400, 0.5, now.Add(-2*time.Hour)
		}
		e.SetHealth(id, h)
		ids[st] = id
	}
	return ids
}

// healthOf reads the health line of a card or of the agent page.
func healthOf(t *testing.T, s *goquery.Selection) (state, href, label, latency, lastOK string) {
	t.Helper()
	b := s.Find(`[data-testid="health-badge"]`)
	if b.Length() != 1 {
		t.Fatalf("%d health badges in %q", b.Length(), Text(s))
	}
	return b.AttrOr("data-state", ""), b.AttrOr("href", ""), Text(b),
		Text(s.Find(`[data-testid="health-latency"]`)), Text(s.Find(`[data-testid="health-last-ok"]`))
}

// TestHealthBadges: the agent page shows the health word, linked to its
// explanation, with the latency and when it last answered, and the status
// badge links to its own explanation. A card has one status line instead:
// a dot whose tone joins status and health, in words, linked to the
// health's explanation, with the latency said with its meaning.
func TestHealthBadges(t *testing.T) {
	e := New(t)
	ids := seedHealth(e)
	want := map[string][4]string{ // label, latency, last answered
		agent.HealthHealthy:  {"Healthy", "~120 ms", "last answered 3 min ago"},
		agent.HealthDegraded: {"Degraded", "~6.4 s", "last answered 2 h ago"},
		agent.HealthFailing:  {"Failing", "", ""},
		agent.HealthUnknown:  {"Not checked yet", "", ""},
	}
	wantCard := map[string][4]string{ // words, anchor, tone, latency
		agent.HealthHealthy:  {"Online and answering", "healthy", "sl-ok", "replies in ~120 ms"},
		agent.HealthDegraded: {"Online, slow or failing at times", "degraded", "sl-warn", "replies in ~6.4 s"},
		agent.HealthFailing:  {"Online but failing", "failing", "sl-bad", ""},
		agent.HealthUnknown:  {"Online, not checked yet", "online", "sl-unknown", ""},
	}
	doc := e.Page("/agents?tag=health", 200)
	for st, id := range ids {
		page := e.Page("/agents/"+id, 200).Selection
		state, href, label, latency, lastOK := healthOf(t, page)
		w := want[st]
		if state != st || href != "/help/status#"+st || label != w[0] || latency != w[1] || lastOK != w[2] {
			t.Errorf("page of %s: state %q href %q label %q latency %q last ok %q, want %s %v", st, state, href, label, latency, lastOK, st, w)
		}
		status := page.Find(`[data-testid="agent-status"]`)
		if got := status.AttrOr("href", ""); got != "/help/status#online" || status.AttrOr("data-status", "") != "online" {
			t.Errorf("page of %s: status badge links to %q", st, got)
		}

		card := doc.Find(`[data-testid="agent-card"][data-agent-id="` + id + `"]`)
		if n := card.Find(`[data-testid="health-badge"], [data-testid="health-last-ok"]`).Length(); n != 0 {
			t.Errorf("card of %s: %d extra status signals, want one line", st, n)
		}
		line := card.Find(`[data-testid="agent-status"]`)
		wc := wantCard[st]
		if line.Length() != 1 || Text(line) != wc[0] || line.AttrOr("href", "") != "/help/status#"+wc[1] || !line.HasClass(wc[2]) ||
			line.AttrOr("data-state", "") != st || line.AttrOr("data-status", "") != "online" || line.AttrOr("title", "") == "" {
			t.Errorf("card of %s: status line %q href %q class %q title %q, want %v", st, Text(line), line.AttrOr("href", ""), line.AttrOr("class", ""), line.AttrOr("title", ""), wc)
		}
		if got := Text(card.Find(`[data-testid="health-latency"]`)); got != wc[3] {
			t.Errorf("card of %s: latency %q, want %q", st, got, wc[3])
		}
	}
	// The badge is a link above the card's stretched link: no inline style
	// nor script is needed for it (strict CSP).
	CheckCSPClean(t, doc)
}

// TestHealthFilter: ?health= keeps only agents in those states, the select
// keeps the choice, and htmx gets the filtered results alone.
func TestHealthFilter(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		ids := seedHealth(e)
		for _, tt := range []struct {
			query string
			want  []string
		}{
			{"health=failing", []string{ids[agent.HealthFailing]}},
			{"health=unknown", []string{ids[agent.HealthUnknown]}},
			{"health=healthy&health=degraded", sorted(ids[agent.HealthHealthy], ids[agent.HealthDegraded])},
			{"health=", sorted(ids[agent.HealthHealthy], ids[agent.HealthDegraded], ids[agent.HealthFailing], ids[agent.HealthUnknown])},
		} {
			doc := e.Page("/agents?tag=health&"+tt.query, 200)
			if got := cardIDs(MustTestid(t, doc, "results")); strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("%s: cards %v, want %v", tt.query, got, tt.want)
			}
		}

		doc := e.Page("/agents?tag=health&health=failing", 200)
		sel := MustTestid(t, doc, "health-filter")
		if sel.AttrOr("name", "") != "health" || sel.AttrOr("hx-get", "") != "/agents" || sel.AttrOr("hx-target", "") != "#results" {
			t.Errorf("health filter is not a form select wired to htmx: %v", sel.Nodes[0].Attr)
		}
		if got := sel.Find("option[selected]").AttrOr("value", ""); got != agent.HealthFailing {
			t.Errorf("selected health option = %q, want failing", got)
		}
		var values []string
		sel.Find("option").Each(func(_ int, o *goquery.Selection) { values = append(values, o.AttrOr("value", "")) })
		if got := strings.Join(values, ","); got != ",healthy,degraded,failing,unknown" {
			t.Errorf("health options = %q", got)
		}
		// The filter is kept in the links that change another part of the search.
		if href := doc.Find(`[data-testid="tag-chip"][data-tag="health"]`).AttrOr("href", ""); href != "/agents?health=failing" {
			t.Errorf("tag chip href = %q, want the health filter kept", href)
		}
		MustTestid(t, doc, "clear-filters")

		doc = e.Page("/agents?tag=health&health=failing", 200, "HX-Request", "true", "HX-Target", "results")
		if got := cardIDs(MustTestid(t, doc, "results")); !IsFragment(doc) || len(got) != 1 || got[0] != ids[agent.HealthFailing] {
			t.Errorf("htmx results = %v (fragment %v)", got, IsFragment(doc))
		}
		// A state that does not exist says so, by the filter's name.
		doc = e.Page("/agents?health=sleepy", 400)
		if got := Text(MustTestid(t, doc, "search-error")); !strings.Contains(got, "Health: must be healthy") {
			t.Errorf("search-error = %q", got)
		}
	})
}
