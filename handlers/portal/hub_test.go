package portal_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestUseThisAgentPanel: the agent page offers the message API call, an
// MCP client config and the A2A card on this node's base URL, each with
// a copy button carrying the same text.
func TestUseThisAgentPanel(t *testing.T) {
	e := New(t)
	id := e.SeedEcho("echo", "Echo")
	checkUsePanel(t, e, id, e.TS.URL)

	pub := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.PublicURL = "https://agents.example.org" })
	checkUsePanel(t, pub, pub.SeedEcho("echo", "Echo"), "https://agents.example.org")
}

func checkUsePanel(t *testing.T, e *Env, id, base string) {
	t.Helper()
	doc := e.Page("/agents/"+id, http.StatusOK)
	panel := MustTestid(t, doc, "use-agent")
	get := func(tid string) string {
		t.Helper()
		s := panel.Find(`[data-testid="` + tid + `"]`)
		if s.Length() != 1 {
			t.Fatalf("%s: %d elements", tid, s.Length())
		}
		text := s.Text()
		copyText := s.Closest(".use-snippet").Find(`[data-testid="copy"]`).AttrOr("data-copy", "")
		if copyText != text {
			t.Errorf("%s: copy button copies %q, shown %q", tid, copyText, text)
		}
		return text
	}
	curl := get("use-curl")
	for _, want := range []string{"curl ", base + "/api/v1/agents/" + id + "/messages", "Content-Type: application/json", `{"text":"Hello"}`} {
		if !strings.Contains(curl, want) {
			t.Errorf("curl %q lacks %q", curl, want)
		}
	}
	var cfg struct {
		MCPServers map[string]struct {
			URL string `json:"url"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(get("use-mcp")), &cfg); err != nil {
		t.Fatalf("MCP config is not JSON: %v", err)
	}
	if got := cfg.MCPServers["agentsite"].URL; got != base+"/mcp" {
		t.Errorf("MCP url = %q, want %q", got, base+"/mcp")
	}
	if got, want := get("use-card"), base+"/a2a/"+id+"/agent-card.json"; got != want {
		t.Errorf("card URL = %q, want %q", got, want)
	}
	if got := get("use-id"); got != id {
		t.Errorf("id = %q, want %q", got, id)
	}
}

// TestHostNaming: cards and the agent page name the node an agent lives
// on ("this node", or "node " and the end of a remote peer id, which the
// title shows in full) and its owner, so identical demos on several nodes
// can be told apart.
func TestHostNaming(t *testing.T) {
	e := New(t)
	local := e.SeedEcho("echo", "Echo")
	remote := e.SeedRemote("echo", "Echo", "bob")
	rid := remote.HostPeerID
	short := "node " + rid[len(rid)-6:]

	doc := e.Page("/agents", http.StatusOK)
	hosts := map[string]string{} // agent id -> host name
	titles := map[string]string{}
	doc.Find(`[data-testid="agent-card"]`).Each(func(_ int, c *goquery.Selection) {
		h := c.Find(`[data-testid="host-name"]`)
		hosts[c.AttrOr("data-agent-id", "")] = Text(h)
		titles[c.AttrOr("data-agent-id", "")] = h.AttrOr("title", "")
	})
	if hosts[local] != "this node" || titles[local] != e.Node.PeerID() {
		t.Errorf("local card host = %q (title %q), want \"this node\"", hosts[local], titles[local])
	}
	if hosts[remote.Record.ID] != short || titles[remote.Record.ID] != rid {
		t.Errorf("remote card host = %q (title %q), want %q (%q)", hosts[remote.Record.ID], titles[remote.Record.ID], short, rid)
	}
	card := doc.Find(`[data-agent-id="` + remote.Record.ID + `"]`)
	if got := Text(card.Find(`[data-testid="host-owner"]`)); got != "by bob" {
		t.Errorf("remote card owner = %q", got)
	}
	if got := strings.Join(strings.Fields(Text(card.Find("h3"))), " "); got != "Echo · "+short {
		t.Errorf("remote card title = %q, want %q", got, "Echo · "+short)
	}

	page := e.Page("/agents/"+remote.Record.ID, http.StatusOK)
	line := MustTestid(t, page, "agent-host-line")
	if h := line.Find(`[data-testid="host-name"]`); Text(h) != short || h.AttrOr("title", "") != rid {
		t.Errorf("agent page host = %q (title %q)", Text(h), h.AttrOr("title", ""))
	}
	if got := Text(line.Find(`[data-testid="host-owner"]`)); got != "by bob" {
		t.Errorf("agent page owner = %q", got)
	}
	if got := Text(MustTestid(t, e.Page("/agents/"+local, http.StatusOK), "host-name")); got != "this node" {
		t.Errorf("local agent page host = %q", got)
	}
}

// TestResultCount: the unfiltered list says how many agents there are in
// all, also when it shows only the first page; a filtered search says how
// many its page holds.
func TestResultCount(t *testing.T) {
	e := New(t)
	for _, n := range []string{"alpha", "bravo", "charlie"} {
		e.SeedEcho(n, strings.ToUpper(n[:1])+n[1:])
	}
	if got := Text(MustTestid(t, e.Page("/agents?limit=2", http.StatusOK), "result-count")); got != "3 agents" {
		t.Errorf("count = %q, want \"3 agents\"", got)
	}
	if got := Text(MustTestid(t, e.Page("/agents?q=bravo", http.StatusOK), "result-count")); got != "1 matching agent" {
		t.Errorf("filtered count = %q", got)
	}
	if got := Text(MustTestid(t, e.Page("/agents?tag=demo&limit=2", http.StatusOK), "result-count")); got != "2 matching agents here, more on the next page" {
		t.Errorf("filtered paged count = %q", got)
	}
}

// TestSortResults: a search is by relevance unless ?sort=newest; the sort
// select shows the choice, the next-page link keeps it, and an unknown
// order is a 400 that says so.
func TestSortResults(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		best := e.SeedEcho("weather-one", "Weather One") // matches by name: best
		in := SimpleInput("zeta-bot", "Zeta", "demo")
		in.Description = "Talks about the weather"
		newest := e.SeedAgent("", in).Record.ID // matches by description, newer

		first := func(path string) (string, *goquery.Document) {
			t.Helper()
			doc := e.Page(path, http.StatusOK)
			return doc.Find(`[data-testid="agent-card"]`).First().AttrOr("data-agent-id", ""), doc
		}
		if got, _ := first("/agents?q=weather"); got != best {
			t.Errorf("default order: first %q, want the name match %q", got, best)
		}
		if got, _ := first("/agents?q=weather&sort=relevance"); got != best {
			t.Errorf("sort=relevance: first %q, want %q", got, best)
		}
		got, doc := first("/agents?q=weather&sort=newest&limit=1")
		if got != newest {
			t.Errorf("sort=newest: first %q, want the newer %q", got, newest)
		}
		if sel := MustTestid(t, doc, "sort-select").Find("option[selected]").AttrOr("value", ""); sel != "newest" {
			t.Errorf("selected sort = %q", sel)
		}
		next := MustTestid(t, doc, "next-page").AttrOr("href", "")
		if !strings.Contains(next, "sort=newest") {
			t.Errorf("next page %q drops the sort", next)
		}
		if got, _ := first(next); got != best {
			t.Errorf("page 2 of newest: %q, want %q", got, best)
		}
		doc = e.Page("/agents?q=weather&sort=sideways", http.StatusBadRequest)
		if msg := Text(MustTestid(t, doc, "search-error")); !strings.Contains(msg, "Sort") {
			t.Errorf("bad sort message = %q", msg)
		}
	})
}
