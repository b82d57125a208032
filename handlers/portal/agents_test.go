package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

func cardIDs(sel *goquery.Selection) []string {
	var ids []string
	sel.Find(`[data-testid="agent-card"]`).Each(func(_ int, s *goquery.Selection) {
		ids = append(ids, s.AttrOr("data-agent-id", ""))
	})
	sort.Strings(ids)
	return ids
}

func TestAgentsSearchPage(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		weather := e.SeedAgent("", SimpleInput("weather-bot", "Weather Bot", "weather", "forecast")).Record.ID
		translator := e.SeedAgent("", SimpleInput("translator", "Polyglot Translator", "language")).Record.ID
		chef := e.SeedAgent("", SimpleInput("recipe-chef", "Recipe Chef", "food", "forecast")).Record.ID
		all := []string{weather, translator, chef}
		sort.Strings(all)

		tests := []struct {
			name   string
			query  string
			status int
			want   []string // card ids; nil with empty: the empty state
			errMsg string   // a search-error containing this
		}{
			{"all", "", 200, all, ""},
			{"text", "q=weather", 200, []string{weather}, ""},
			{"prefix as you type", "q=polyg", 200, []string{translator}, ""},
			{"tag", "tag=forecast", 200, sorted(weather, chef), ""},
			{"two tags AND", "tag=forecast&tag=food", 200, []string{chef}, ""},
			{"text and tag", "q=recipe&tag=forecast", 200, []string{chef}, ""},
			{"no match", "q=zzzz", 200, nil, ""},
			{"offline only", "status=offline", 200, nil, ""},
			{"all statuses", "status=all", 200, all, ""},
			{"bad tag", "tag=Not%20A%20Tag!", 400, nil, "is not a tag"},
			{"bad status", "status=sleepy", 400, nil, "must be online"},
			{"bad cursor", "cursor=xyz", 400, nil, "Page link"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				doc := e.Page("/agents?"+tt.query, tt.status)
				res := MustTestid(t, doc, "results")
				if tt.errMsg != "" {
					if got := Text(MustTestid(t, doc, "search-error")); !strings.Contains(got, tt.errMsg) {
						t.Errorf("search-error = %q, want it to contain %q", got, tt.errMsg)
					}
					return
				}
				got := cardIDs(res)
				if fmt.Sprint(got) != fmt.Sprint(tt.want) {
					t.Errorf("cards = %v, want %v", got, tt.want)
				}
				if len(tt.want) == 0 {
					MustTestid(t, doc, "results-empty")
				}
			})
		}

		// The form keeps the query; selected tag chips toggle themselves off.
		doc := e.Page("/agents?q=recipe&tag=forecast", 200)
		if v, _ := InputValue(doc, "q"); v != "recipe" {
			t.Errorf("q input = %q", v)
		}
		chip := doc.Find(`[data-testid="tag-chip"][data-tag="forecast"]`)
		if chip.AttrOr("data-selected", "") != "true" {
			t.Fatalf("forecast chip not selected: %v", chip.Nodes)
		}
		if href := chip.AttrOr("href", ""); href != "/agents?q=recipe" {
			t.Errorf("selected chip href = %q, want it to drop the tag", href)
		}
		food := doc.Find(`[data-testid="tag-chip"][data-tag="food"]`)
		if href := food.AttrOr("href", ""); href != "/agents?q=recipe&tag=forecast&tag=food" {
			t.Errorf("food chip href = %q", href)
		}
		if doc.Find(`[data-testid="search-form"] input[type=hidden][name=tag][value=forecast]`).Length() != 1 {
			t.Error("selected tag is not kept in the form")
		}
		MustTestid(t, doc, "clear-filters")
		// A tag filter offers a search of the whole network for it.
		if ns := MustTestid(t, doc, "network-search"); ns.AttrOr("method", "") != "post" ||
			ns.Find(`input[name=tag][value=forecast]`).Length() != 1 {
			t.Error("network search form missing its tag")
		}
		// The form works without JavaScript.
		form := MustTestid(t, doc, "search-form")
		if form.AttrOr("action", "") != "/agents" || form.AttrOr("method", "") != "get" {
			t.Error("search form is not a plain GET form to /agents")
		}
		if in := MustTestid(t, doc, "search-input"); in.AttrOr("hx-target", "") != "#results" || in.AttrOr("hx-get", "") != "/agents" {
			t.Error("search box is not wired to htmx")
		}
	})
}

func sorted(ss ...string) []string {
	sort.Strings(ss)
	return ss
}

// TestAgentsSearchHTMX: as you type, htmx gets only the results and, out of
// band, the tag filters.
func TestAgentsSearchHTMX(t *testing.T) {
	e := New(t)
	id := e.SeedAgent("", SimpleInput("weather-bot", "Weather Bot", "weather")).Record.ID
	e.SeedAgent("", SimpleInput("translator", "Translator", "language"))

	doc := e.Page("/agents?q=weath", 200, "HX-Request", "true", "HX-Target", "results")
	if !IsFragment(doc) {
		t.Fatal("htmx results response is a whole page")
	}
	if got := cardIDs(MustTestid(t, doc, "results")); len(got) != 1 || got[0] != id {
		t.Errorf("cards = %v", got)
	}
	oob := MustTestid(t, doc, "tag-filters")
	if oob.AttrOr("hx-swap-oob", "") != "true" {
		t.Error("tag filters are not swapped out of band")
	}
	if href := oob.Find(`[data-tag="weather"]`).AttrOr("href", ""); href != "/agents?q=weath&tag=weather" {
		t.Errorf("chip href = %q, want the new query in it", href)
	}
	// The chips follow the query: no tag of what it does not find.
	if oob.Find(`[data-tag="language"]`).Length() != 0 {
		t.Error("a chip for language, which no result of q=weath has")
	}
	// An invalid query still swaps in its message (2xx).
	doc = e.Page("/agents?status=nope", 200, "HX-Request", "true", "HX-Target", "results")
	MustTestid(t, doc, "search-error")
	// A history restore gets the whole page.
	doc = e.Page("/agents?q=weath", 200, "HX-Request", "true", "HX-Target", "results", "HX-History-Restore-Request", "true")
	if IsFragment(doc) {
		t.Error("history restore got a fragment")
	}
}

// TestAgentsPagination walks the "Next page" links (no JavaScript) and the
// htmx "load more" fragments; together they must list every agent once.
func TestAgentsPagination(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		const n = 23
		want := map[string]bool{}
		for i := range n {
			l := e.SeedAgent("", SimpleInput(fmt.Sprintf("bot-%02d", i), fmt.Sprintf("Bot %d", i), "paged"))
			want[l.Record.ID] = true
		}
		for _, htmx := range []bool{false, true} {
			t.Run(fmt.Sprintf("htmx=%v", htmx), func(t *testing.T) {
				seen := map[string]bool{}
				next, pages := "/agents?tag=paged&limit=5", 0
				for next != "" {
					pages++
					if pages > 10 {
						t.Fatal("pagination does not end")
					}
					var doc *goquery.Document
					if htmx && pages > 1 {
						doc = e.Page(next, 200, "HX-Request", "true", "HX-Target", "pager")
						if !IsFragment(doc) || Testid(doc, "results").Length() != 0 {
							t.Fatal("load-more is not a bare fragment of cards")
						}
					} else {
						doc = e.Page(next, 200)
					}
					doc.Find(`[data-testid="agent-card"]`).Each(func(_ int, s *goquery.Selection) {
						id := s.AttrOr("data-agent-id", "")
						if seen[id] {
							t.Errorf("agent %s listed twice", id)
						}
						seen[id] = true
					})
					link := Testid(doc, "next-page")
					next = link.AttrOr("href", "")
					if next != "" {
						if link.AttrOr("hx-target", "") != "#pager" {
							t.Error("next-page link is not wired to htmx")
						}
						u, _ := url.Parse(next)
						if u.Query().Get("tag") != "paged" || u.Query().Get("limit") != "5" || u.Query().Get("cursor") == "" {
							t.Errorf("next-page href %q loses the query", next)
						}
					}
				}
				if len(seen) != n || pages != 5 {
					t.Errorf("saw %d agents on %d pages, want %d on 5", len(seen), pages, n)
				}
				for id := range want {
					if !seen[id] {
						t.Errorf("agent %s never listed", id)
					}
				}
			})
		}
	})
}

// TestHomePage: counts, recent agents and top tags.
func TestHomePage(t *testing.T) {
	e := New(t)
	doc := e.Page("/", http.StatusOK)
	if got := Text(MustTestid(t, doc, "count-agents")); got != "0" {
		t.Errorf("empty count-agents = %q", got)
	}
	e.SeedAgent("", SimpleInput("weather-bot", "Weather Bot", "weather", "forecast"))
	e.SeedAgent("", SimpleInput("translator", "Translator", "language", "forecast"))
	doc = e.Page("/", http.StatusOK)
	for id, want := range map[string]string{"count-agents": "2", "count-online": "2", "count-tags": "3"} {
		if got := Text(MustTestid(t, doc, id)); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	if got := Testid(doc, "recent-agents").Find(`[data-testid="agent-card"]`).Length(); got != 2 {
		t.Errorf("recent agents = %d, want 2", got)
	}
	if first := Text(MustTestid(t, doc, "top-tags").Find(`[data-testid="tag"]`).First()); !strings.HasPrefix(first, "forecast") {
		t.Errorf("top tag = %q, want forecast first", first)
	}
}
