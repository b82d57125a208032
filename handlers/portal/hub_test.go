package portal_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
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
	// One-click installs of the same /mcp: Cursor's link carries its
	// mcp.json entry as base64 JSON, VS Code's the server as JSON, and
	// Claude Code gets its command.
	if got, want := get("use-claude-code"), "claude mcp add --transport http agentsite "+base+"/mcp"; got != want {
		t.Errorf("Claude Code command = %q, want %q", got, want)
	}
	cursor, err := url.Parse(panel.Find(`[data-testid="add-to-cursor"]`).AttrOr("href", ""))
	if err != nil || cursor.Scheme != "cursor" || cursor.Host != "anysphere.cursor-deeplink" || cursor.Path != "/mcp/install" || cursor.Query().Get("name") != "agentsite" {
		t.Fatalf("Cursor link = %v (%v)", cursor, err)
	}
	var cur map[string]string
	if raw, err := base64.StdEncoding.DecodeString(cursor.Query().Get("config")); err != nil || json.Unmarshal(raw, &cur) != nil || cur["url"] != base+"/mcp" {
		t.Errorf("Cursor link config = %q (%v), want the url %s/mcp", raw, err, base)
	}
	vscode := panel.Find(`[data-testid="add-to-vscode"]`).AttrOr("href", "")
	raw, err := url.PathUnescape(strings.TrimPrefix(vscode, "vscode:mcp/install?"))
	var vs map[string]string
	if !strings.HasPrefix(vscode, "vscode:mcp/install?") || err != nil || json.Unmarshal([]byte(raw), &vs) != nil || vs["url"] != base+"/mcp" || vs["type"] != "http" || vs["name"] != "agentsite" {
		t.Errorf("VS Code link = %q, want the server as JSON", vscode)
	}
}

// TestHostNaming: cards and the agent page name the node an agent lives
// on by the name its heartbeat carries ("node-b"; this node by its
// --node-name), with the full peer id on hover; a node without a name is
// "node " and the end of its peer id; a name two nodes use gets the end
// of the peer id beside it (a label, not an identity).
func TestHostNaming(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.NodeName = "node-a" })
	local := e.SeedEcho("echo", "Echo")
	calc := e.SeedRemote("calculator", "Calculator", "bob")
	e.NameNode(calc.HostPeerID, "node-b")
	anon := e.SeedRemote("quiet", "Quiet", "")
	twin1, twin2 := e.SeedRemote("twin-one", "Twin One", ""), e.SeedRemote("twin-two", "Twin Two", "")
	e.NameNode(twin1.HostPeerID, "twin")
	e.NameNode(twin2.HostPeerID, "twin")
	short := func(id string) string { return id[len(id)-6:] }

	type host struct{ name, short, title, self string }
	read := func(s *goquery.Selection) host {
		h := s.Find(`[data-testid="host-name"]`).First()
		return host{Text(h), Text(s.Find(`[data-testid="host-short"]`).First()), h.AttrOr("title", ""), h.AttrOr("data-self", "")}
	}
	doc := e.Page("/agents", http.StatusOK)
	cards := map[string]host{}
	doc.Find(`[data-testid="agent-card"]`).Each(func(_ int, c *goquery.Selection) { cards[c.AttrOr("data-agent-id", "")] = read(c) })
	for id, want := range map[string]host{
		local:           {"node-a", "", e.Node.PeerID(), "true"},
		calc.Record.ID:  {"node-b", "", calc.HostPeerID, "false"},
		anon.Record.ID:  {"node " + short(anon.HostPeerID), "", anon.HostPeerID, "false"},
		twin1.Record.ID: {"twin", short(twin1.HostPeerID), twin1.HostPeerID, "false"},
		twin2.Record.ID: {"twin", short(twin2.HostPeerID), twin2.HostPeerID, "false"},
	} {
		if got := cards[id]; got != want {
			t.Errorf("card %s: host %+v, want %+v", id, got, want)
		}
	}
	card := doc.Find(`[data-agent-id="` + calc.Record.ID + `"]`)
	if got := Text(card.Find(`[data-testid="host-owner"]`)); got != "by bob" {
		t.Errorf("remote card owner = %q", got)
	}
	if got := strings.Join(strings.Fields(Text(card.Find(".agent-card-sub"))), " "); got != "calculator · on node-b" {
		t.Errorf("remote card subtitle = %q", got)
	}

	page := e.Page("/agents/"+calc.Record.ID, http.StatusOK)
	line := MustTestid(t, page, "agent-host-line")
	if got := read(line); got != (host{"node-b", "", calc.HostPeerID, "false"}) {
		t.Errorf("agent page host = %+v", got)
	}
	if got := Text(line.Find(`[data-testid="host-owner"]`)); got != "by bob" {
		t.Errorf("agent page owner = %q", got)
	}
	if got := read(MustTestid(t, e.Page("/agents/"+local, http.StatusOK), "agent-host-line")); got.name != "node-a" || got.self != "true" {
		t.Errorf("local agent page host = %+v", got)
	}

	// The chat header too.
	if got := Text(MustTestid(t, e.Page("/chat/"+calc.Record.ID, http.StatusOK), "chat-agent-host")); !strings.Contains(got, "node-b") {
		t.Errorf("chat header of node-b's agent says %q", got)
	}

	// /nodes names the nodes too, and says this node's name.
	nodes := e.Page("/nodes", http.StatusOK)
	if got := Text(MustTestid(t, nodes, "node-self-name")); got != "node-a" {
		t.Errorf("/nodes says this node is %q", got)
	}
	row := nodes.Find(`[data-testid="node-row"][data-peer-id="` + calc.HostPeerID + `"]`)
	if got := read(row); got.name != "node-b" || got.title != calc.HostPeerID {
		t.Errorf("/nodes row of node-b: %+v", got)
	}
	if got := read(nodes.Find(`[data-testid="node-row"][data-peer-id="` + twin2.HostPeerID + `"]`)); got.short != short(twin2.HostPeerID) {
		t.Errorf("/nodes row of a twin: %+v, want its short id beside the name", got)
	}
	if got := Text(nodes.Find(`[data-testid="net-self"] text`)); got != "node-a (this node)" {
		t.Errorf("map label of this node = %q", got)
	}
}

// TestGroupedCards: listings of several nodes with the same name,
// description and skills are one card, "and N more nodes", this node's
// copy in front; the agent page lists the other hosts. A different
// description is another card.
func TestGroupedCards(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.NodeName = "node-a" })
	in := SimpleInput("echo", "Echo", "demo")
	in.Description = "A remote echo" // as SeedRemote describes its copies
	local := e.SeedAgent("", in).Record.ID
	b, c := e.SeedRemote("echo", "Echo", ""), e.SeedRemote("echo", "Echo", "")
	e.NameNode(b.HostPeerID, "node-b")
	e.NameNode(c.HostPeerID, "node-c")
	other := e.SeedEcho("echo-two", "Echo Two")

	for _, path := range []string{"/agents", "/agents?q=echo", "/"} {
		doc := e.Page(path, http.StatusOK)
		ids := cardIDs(doc.Selection)
		if !slices.Contains(ids, local) || slices.Contains(ids, b.Record.ID) || slices.Contains(ids, c.Record.ID) {
			t.Errorf("%s: cards %v, want one echo card (this node's, %s)", path, ids, local)
			continue
		}
		card := doc.Find(`[data-testid="agent-card"][data-agent-id="` + local + `"]`)
		if got := card.Find(`[data-testid="card-nodes"]`); got.AttrOr("data-nodes", "") != "3" || Text(got) != "and 2 more nodes" {
			t.Errorf("%s: grouped card says %q (%s nodes)", path, Text(got), got.AttrOr("data-nodes", ""))
		}
		if n := doc.Find(`[data-testid="agent-card"][data-agent-id="` + other + `"] [data-testid="card-nodes"]`).Length(); n != 0 {
			t.Errorf("%s: a one-node card shows a node count", path)
		}
	}
	page := e.Page("/agents/"+local, http.StatusOK)
	var others []string
	MustTestid(t, page, "other-hosts").Find(`[data-testid="other-host"]`).Each(func(_ int, s *goquery.Selection) {
		others = append(others, Text(s))
	})
	slices.Sort(others)
	if strings.Join(others, ",") != "node-b,node-c" {
		t.Errorf("agent page lists other hosts %v, want node-b and node-c", others)
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
