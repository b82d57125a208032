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
	return b.AttrOr("data-state", ""), b.AttrOr("href", ""), Text(b.Find(`[data-testid="status-text"]`)),
		Text(s.Find(`[data-testid="health-latency"]`)), Text(s.Find(`[data-testid="health-last-ok"]`))
}

// explained checks that a status word carries its explanation both as a
// tooltip and as text for screen readers, and that it says want.
func explained(t *testing.T, where string, link *goquery.Selection, want string) {
	t.Helper()
	title := link.AttrOr("title", "")
	sr := Text(link.Find(`[data-testid="status-explained"]`))
	if title == "" || !strings.Contains(title, want) || !strings.Contains(sr, want) || !link.Find(`[data-testid="status-explained"]`).HasClass("visually-hidden") {
		t.Errorf("%s: tooltip %q, screen-reader text %q, want both to say %q", where, title, sr, want)
	}
}

// TestHealthBadges: a card and the agent page say one word a visitor can
// act on ("Available": it answers now; "Not answering": its node is up
// but the agent fails; "Unreliable"; "Not checked yet"), linked to its
// explanation and explained in a tooltip and to screen readers; the page
// adds the latency and when it last answered, the card the latency said
// with its meaning. Neither says "Online" beside a failing agent.
func TestHealthBadges(t *testing.T) {
	e := New(t)
	ids := seedHealth(e)
	want := map[string][4]string{ // label, latency, last answered, tooltip says
		agent.HealthHealthy:  {"Available", "~120 ms", "last answered 3 min ago", "answers now"},
		agent.HealthDegraded: {"Unreliable", "~6.4 s", "last answered 2 h ago", "slowly or not always"},
		agent.HealthFailing:  {"Not answering", "", "", "node is up but the agent fails"},
		agent.HealthUnknown:  {"Not checked yet", "", "", "not checked"},
	}
	wantCard := map[string][4]string{ // words, anchor, tone, latency
		agent.HealthHealthy:  {"Available", "healthy", "sl-ok", "replies in ~120 ms"},
		agent.HealthDegraded: {"Unreliable", "degraded", "sl-warn", "replies in ~6.4 s"},
		agent.HealthFailing:  {"Not answering", "failing", "sl-bad", ""},
		agent.HealthUnknown:  {"Not checked yet", "online", "sl-unknown", ""},
	}
	doc := e.Page("/agents?tag=health", 200)
	for st, id := range ids {
		page := e.Page("/agents/"+id, 200).Selection
		state, href, label, latency, lastOK := healthOf(t, page)
		w := want[st]
		if state != st || href != "/help/status#"+wantCard[st][1] || label != w[0] || latency != w[1] || lastOK != w[2] {
			t.Errorf("page of %s: state %q href %q label %q latency %q last ok %q, want %s %v", st, state, href, label, latency, lastOK, st, w)
		}
		explained(t, "page of "+st, page.Find(`[data-testid="health-badge"]`), w[3])
		if strings.Contains(Text(page.Find(`[data-testid="agent-detail"] header`)), "Online") {
			t.Errorf("page of %s: the head says Online: %q", st, Text(page.Find(`[data-testid="agent-detail"] header`)))
		}

		card := doc.Find(`[data-testid="agent-card"][data-agent-id="` + id + `"]`)
		if n := card.Find(`[data-testid="health-badge"], [data-testid="health-last-ok"]`).Length(); n != 0 {
			t.Errorf("card of %s: %d extra status signals, want one line", st, n)
		}
		line := card.Find(`[data-testid="agent-status"]`)
		wc := wantCard[st]
		if line.Length() != 1 || Text(line.Find(`[data-testid="status-text"]`)) != wc[0] || line.AttrOr("href", "") != "/help/status#"+wc[1] || !line.HasClass(wc[2]) ||
			line.AttrOr("data-state", "") != st || line.AttrOr("data-status", "") != "online" {
			t.Errorf("card of %s: status line %q href %q class %q, want %v", st, Text(line), line.AttrOr("href", ""), line.AttrOr("class", ""), wc)
		}
		explained(t, "card of "+st, line, w[3])
		if got := Text(card.Find(`[data-testid="health-latency"]`)); got != wc[3] {
			t.Errorf("card of %s: latency %q, want %q", st, got, wc[3])
		}
	}
	// The badge is a link above the card's stretched link: no inline style
	// nor script is needed for it (strict CSP).
	CheckCSPClean(t, doc)
}

// TestStatusWordsQuiet: a listing whose node went quiet reads "Quiet" on
// its card, its page and the status help page (the badge /nodes shows),
// explained as such; the search
// filter's default says "Online or quiet", never the jargon "stale", and
// each filter choice has a tooltip.
func TestStatusWordsQuiet(t *testing.T) {
	e := New(t)
	id := e.SeedAgent("", SimpleInput("quiet-bot", "Quiet Bot", "quiet")).Record.ID
	if _, err := e.Store.SetHostStatus(t.Context(), e.Node.PeerID(), "stale", time.Time{}); err != nil {
		t.Fatal(err)
	}
	doc := e.Page("/agents?tag=quiet", 200)
	line := doc.Find(`[data-testid="agent-card"][data-agent-id="` + id + `"] [data-testid="agent-status"]`)
	if got := Text(line.Find(`[data-testid="status-text"]`)); got != "Quiet" {
		t.Errorf("card word = %q, want Quiet", got)
	}
	explained(t, "card", line, "quiet")
	page := e.Page("/agents/"+id, 200)
	b := MustTestid(t, page, "health-badge")
	if got := Text(b.Find(`[data-testid="status-text"]`)); got != "Quiet" || b.AttrOr("href", "") != "/help/status#stale" {
		t.Errorf("page word = %q (href %q), want Quiet", got, b.AttrOr("href", ""))
	}
	explained(t, "page", b, "quiet")

	sel := MustTestid(t, doc, "status-filter")
	def := sel.Find(`option[value=""]`)
	if Text(def) != "Online or quiet" || strings.Contains(strings.ToLower(Text(sel)), "stale") {
		t.Errorf("status filter reads %q (default %q)", Text(sel), Text(def))
	}
	sel.Find("option").Each(func(_ int, o *goquery.Selection) {
		if o.AttrOr("value", "") != "all" && o.AttrOr("title", "") == "" {
			t.Errorf("status option %q has no tooltip", Text(o))
		}
	})
	MustTestid(t, doc, "health-filter").Find("option").Each(func(_ int, o *goquery.Selection) {
		if o.AttrOr("value", "") != "" && o.AttrOr("title", "") == "" {
			t.Errorf("health option %q has no tooltip", Text(o))
		}
	})

	help := e.Page("/help/status", 200)
	if got := Text(help.Find(`#stale [data-testid="status-text"]`)); got != "Quiet" {
		t.Errorf("help page word for stale = %q", got)
	}
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

// TestLiveSearchAddressDropsEmptyParameters: the live search sends every
// control of the form, empty ones too; the address htmx pushes keeps only
// what was chosen, and the narrow-screen placeholder is there for app.js.
func TestLiveSearchAddressDropsEmptyParameters(t *testing.T) {
	e := New(t)
	resp := e.Do("GET", "/agents?q=zebr&status=&health=&sort=&verified=", nil, "HX-Request", "true", "HX-Target", "results")
	WantStatus(t, resp, 200)
	if got := resp.Header.Get("HX-Push-Url"); got != "/agents?q=zebr" {
		t.Errorf("HX-Push-Url = %q, want /agents?q=zebr", got)
	}
	resp = e.Do("GET", "/agents?q=&status=all&health=failing&sort=", nil, "HX-Request", "true", "HX-Target", "results")
	if got := resp.Header.Get("HX-Push-Url"); got != "/agents?health=failing&status=all" {
		t.Errorf("HX-Push-Url = %q, want /agents?health=failing&status=all", got)
	}
	box := MustTestid(t, e.Page("/agents", 200), "search-input")
	if p := box.AttrOr("data-placeholder-narrow", ""); p == "" || len(p) >= len(box.AttrOr("placeholder", "")) {
		t.Errorf("narrow placeholder %q, wide %q", p, box.AttrOr("placeholder", ""))
	}
}
