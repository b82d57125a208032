package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestTagChipsFollowTheFilter: the chips are the tags of what the current
// filter finds, with their counts there; following any chip never ends on
// "No agents match"; the first twelve show and the rest are in a <details>;
// selected chips are marked with aria-current, never aria-pressed.
func TestTagChipsFollowTheFilter(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		// 15 tags: t00 on every agent, tNN (NN ≥ 1) on agents i with i%NN == 0.
		for i := range 16 {
			tags := []string{"t00"}
			for k := 1; k < 15; k++ {
				if i%k == 0 && len(tags) < 10 {
					tags = append(tags, fmt.Sprintf("t%02d", k))
				}
			}
			desc := "plain"
			if i%2 == 0 {
				desc = "even"
			}
			in := SimpleInput(fmt.Sprintf("agent-%02d", i), fmt.Sprintf("Agent %02d", i), tags...)
			in.Description = desc + " agent"
			e.SeedAgent("", in)
		}
		doc := e.Page("/agents", http.StatusOK)
		filters := MustTestid(t, doc, "tag-filters")
		if n := filters.Find(`[aria-pressed]`).Length(); n != 0 {
			t.Errorf("%d chips with aria-pressed", n)
		}
		shown := filters.Children().Filter("ul").Find(`[data-testid="tag-chip"]`).Length()
		more := filters.Find(`details[data-testid="more-tags"] [data-testid="tag-chip"]`).Length()
		if shown != 12 || more == 0 {
			t.Errorf("%d chips shown and %d behind 'more', want 12 and the rest", shown, more)
		}
		if got := chipCount(filters, "t00"); got != "16" {
			t.Errorf("t00 count = %q, want 16", got)
		}

		// Under a text filter the counts are of its results.
		doc = e.Page("/agents?q=even", http.StatusOK)
		filters = MustTestid(t, doc, "tag-filters")
		if got := chipCount(filters, "t00"); got != "8" {
			t.Errorf("q=even: t00 count = %q, want 8", got)
		}
		if filters.Find(`[data-tag="t03"]`).Length() != 1 || filters.Find(`[data-tag="t08"]`).Length() != 1 {
			t.Error("q=even: t03 (agents 0, 6, 12) or t08 (agents 0, 8) missing")
		}

		// Every chip of every page reached by chips leads to results.
		seen := map[string]bool{}
		var visit func(href string, depth int)
		visit = func(href string, depth int) {
			if seen[href] || depth > 2 {
				return
			}
			seen[href] = true
			doc := e.Page(href, http.StatusOK)
			if Testid(doc, "results-empty").Length() != 0 {
				t.Errorf("%s: No agents match", href)
				return
			}
			Testid(doc, "tag-chip").Each(func(_ int, s *goquery.Selection) {
				if s.AttrOr("data-selected", "") == "true" {
					if s.AttrOr("aria-current", "") != "true" {
						t.Errorf("%s: selected chip %s without aria-current", href, s.AttrOr("data-tag", ""))
					}
					return
				}
				if s.AttrOr("aria-current", "") != "" {
					t.Errorf("%s: unselected chip %s has aria-current", href, s.AttrOr("data-tag", ""))
				}
				if depth < 2 || slices.Contains([]string{"t13", "t07"}, s.AttrOr("data-tag", "")) {
					visit(s.AttrOr("href", ""), depth+1)
				}
			})
		}
		visit("/agents?q=even", 0)
		visit("/agents?tag=t05", 0)
		if len(seen) < 10 {
			t.Errorf("only %d pages visited", len(seen))
		}
	})
}

func chipCount(filters *goquery.Selection, tag string) string {
	return Text(filters.Find(`[data-tag="` + tag + `"] .chip-count`))
}

// TestAgentsSortByName: ?sort=name orders by display name (case folded)
// and pages through all of them once; the select offers it.
func TestAgentsSortByName(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		display := []string{"delta", "Alpha", "charlie", "bravo", "Echo"}
		for i, d := range display {
			e.SeedAgent("", SimpleInput(fmt.Sprintf("agent-%d", i), d, "x"))
		}
		var got []string
		href := "/agents?sort=name&limit=2"
		for pages := 0; href != "" && pages < 10; pages++ {
			doc := e.Page(href, http.StatusOK)
			doc.Find(`[data-testid="agent-link"]`).Each(func(_ int, s *goquery.Selection) { got = append(got, Text(s)) })
			href = Testid(doc, "next-page").AttrOr("href", "")
			if href != "" {
				if u, err := url.Parse(href); err != nil || u.Query().Get("sort") != "name" {
					t.Errorf("next page %q loses the sort", href)
				}
			}
		}
		if want := []string{"Alpha", "bravo", "charlie", "delta", "Echo"}; !slices.Equal(got, want) {
			t.Errorf("by name: %q, want %q", got, want)
		}
		doc := e.Page("/agents?sort=name", http.StatusOK)
		if v := MustTestid(t, doc, "sort-select").Find("option[selected]").AttrOr("value", ""); v != "name" {
			t.Errorf("sort select shows %q, want name", v)
		}
		doc = e.Page("/agents?sort=bogus", http.StatusBadRequest)
		if msg := Text(MustTestid(t, doc, "search-error")); !strings.Contains(msg, "name") {
			t.Errorf("bad sort message %q does not offer name", msg)
		}
	})
}

// TestChatEverywhere: the nav has AgentChat; /chat lists the visitor's
// conversations (and only theirs) and offers agents; cards have a Chat
// button to the agent's chat page.
func TestChatEverywhere(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	alice := e.Visitor()
	doc := alice.Page("/chat", http.StatusOK)
	if got := Text(MustTestid(t, doc, "nav-chat")); got != "AgentChat" {
		t.Errorf("nav-chat says %q", got)
	}
	if MustTestid(t, doc, "nav-chat").AttrOr("aria-current", "") != "page" {
		t.Error("nav-chat is not current on /chat")
	}
	MustTestid(t, doc, "chat-index-empty")
	if href := MustTestid(t, doc, "card-chat").AttrOr("href", ""); href != "/chat/"+id {
		t.Errorf("card Chat button goes to %q", href)
	}

	alice.Page("/chat/"+id, http.StatusOK)
	resp := alice.PostForm("/chat/"+id, url.Values{"text": {"hello from alice"}, "c": {""}})
	WantStatus(t, resp, http.StatusSeeOther)
	conv := must(url.Parse(Location(t, resp))).Query().Get("c")

	doc = alice.Page("/chat", http.StatusOK)
	items := MustTestid(t, doc, "recent-conversations").Find(`[data-testid="recent-conversation"]`)
	if items.Length() != 1 || items.AttrOr("data-conversation-id", "") != conv {
		t.Fatalf("recent conversations: %d items, want %s", items.Length(), conv)
	}
	if href := items.Find("a").AttrOr("href", ""); href != "/chat/"+id+"?c="+conv {
		t.Errorf("conversation link %q", href)
	}
	if !strings.Contains(Text(items), "Echo Bot") {
		t.Errorf("conversation item %q does not name its agent", Text(items))
	}
	// Another visitor sees none of them.
	doc = e.Visitor().Page("/chat", http.StatusOK)
	MustTestid(t, doc, "chat-index-empty")

	// Cards elsewhere carry the Chat button too.
	doc = e.Page("/agents", http.StatusOK)
	if Testid(doc, "card-chat").Length() != 1 {
		t.Error("no Chat button on the /agents card")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestNetworkPage: the Network page draws this node and counts it, on a
// single node too.
func TestNetworkPage(t *testing.T) {
	e := New(t)
	doc := e.Page("/nodes", http.StatusOK)
	if got := Text(MustTestid(t, doc, "nodes-known")); got != "1" {
		t.Errorf("nodes known on a single node = %q, want 1 (this node)", got)
	}
	svg := MustTestid(t, doc, "net-map").Find("svg")
	if svg.Length() != 1 || svg.AttrOr("role", "") != "img" || svg.Find("title").Length() != 1 {
		t.Error("network picture is not an accessible SVG")
	}
	MustTestid(t, doc, "net-self")
	// A node on loopback only is never judged by AutoNAT: the page says
	// what that means instead of "unknown" forever.
	if got := Text(MustTestid(t, doc, "node-reachability")); got != "local network only" {
		t.Errorf("reachability %q, want local network only", got)
	}
	if got := Text(MustTestid(t, doc, "net-reachability")); got != "local network only" {
		t.Errorf("reachability in the counts %q, want local network only", got)
	}
	doc = e.Page("/", http.StatusOK)
	if got := Text(MustTestid(t, doc, "count-nodes")); got != "1" {
		t.Errorf("home counts %q nodes, want 1 (this node)", got)
	}
}
