package portal_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestToolPickerFragment: the agent form's tool picker (GET
// /register/tools) answers with the hub's listings matching its search,
// MCP servers first, each with its kind, host and what it offers (an MCP
// listing's tools), at most 8, hostile names escaped, catalogue listings
// no node answers for left out, and the ids already in the Tools field
// marked added. It is for people logged in.
func TestToolPickerFragment(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	mcp := e.SeedAgent("", registry.Input{
		Name: "zeta-weather-mcp", DisplayName: "Zeta Weather Server", Description: "Weather tools.",
		Tags:    []string{"mcp", "zeta"},
		Skills:  []agent.Skill{{ID: "get-forecast", Name: "get_forecast"}, {ID: "get-alerts", Name: "get_alerts"}},
		Backend: agent.Backend{Kind: agent.BackendMCP, URL: "https://tools.example.com/mcp", Tool: "get_forecast"},
	}).Record.ID
	const hostile = `Zeta <img src=x onerror=alert(1)>`
	evil := e.SeedAgent("", registry.Input{
		Name: "zeta-evil", DisplayName: hostile, Description: `Says <script>alert(2)</script> zeta.`,
		Tags: []string{"zeta"}, Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}).Record.ID
	e.SeedAgent("", registry.Input{
		Name: "zeta-catalogue", DisplayName: "Zeta Not Hosted", Description: "Install it yourself.",
		Tags: []string{"mcp", "not-hosted", "zeta"}, Backend: agent.Backend{Kind: agent.BackendCatalogue},
	})
	for i := range 10 {
		e.SeedAgent("", SimpleInput(fmt.Sprintf("zeta-echo-%d", i), fmt.Sprintf("Zeta Echo %d", i), "zeta"))
	}

	get := func(q, tools string) *http.Response {
		return e.Do(http.MethodGet, "/register/tools?"+url.Values{"tool_q": {q}, "backend_tools": {tools}}.Encode(), nil, "HX-Request", "true")
	}
	resp := get("zeta", evil+"\nhttps://other.example.com/mcp")
	doc := ParsePage(t, resp, http.StatusOK)
	if !IsFragment(doc) {
		t.Fatal("the picker answers with a whole page, want its results alone")
	}
	results := doc.Find(`[data-testid="tool-result"]`)
	if results.Length() != 8 {
		t.Errorf("%d results, want at most 8", results.Length())
	}
	first := results.First()
	if id, _ := first.Attr("data-agent-id"); id != mcp {
		t.Errorf("first result %s, want the MCP server %s", id, mcp)
	}
	if got := Text(first.Find(`[data-testid="tool-result-kind"]`)); got != "MCP server" {
		t.Errorf("MCP kind = %q", got)
	}
	if got := Text(first.Find(`[data-testid="tool-result-offers"]`)); got != "Tools: get_forecast, get_alerts" {
		t.Errorf("MCP offers = %q, want its tools", got)
	}
	if got := Text(first.Find(`[data-testid="tool-result-host"]`)); !strings.HasPrefix(got, "on ") || len(got) < 4 {
		t.Errorf("host = %q", got)
	}
	if v, _ := first.Find(`[data-testid="tool-add"]`).Attr("data-add-tool"); v != mcp {
		t.Errorf("Add of the MCP server adds %q", v)
	}
	if doc.Find(`[data-testid="tool-result-name"]:contains("Not Hosted")`).Length() != 0 {
		t.Error("a catalogue listing no node answers for is offered as a tool")
	}
	// The hostile listing: its name is text, not markup; it is listed in
	// the field already, so it says added and has no Add button.
	ev := doc.Find(fmt.Sprintf(`[data-testid="tool-result"][data-agent-id=%q]`, evil))
	if ev.Length() == 0 {
		// Not among the 8: ask for it alone.
		ev = ParsePage(t, get("evil", evil), http.StatusOK).Find(`[data-testid="tool-result"]`)
	}
	if got := Text(ev.Find(`[data-testid="tool-result-name"]`)); got != hostile {
		t.Errorf("hostile name shows as %q", got)
	}
	if ev.Find("img, script").Length() != 0 {
		t.Error("the hostile name or description became markup")
	}
	if ev.Find(`[data-testid="tool-added"]`).Length() != 1 || ev.Find(`[data-testid="tool-add"]`).Length() != 0 {
		t.Error("an agent already in Tools is not marked added")
	}

	// Nothing found: said; a blank search: nothing at all.
	doc = ParsePage(t, get("qqqzzz", ""), http.StatusOK)
	if got := Text(MustTestid(t, doc, "tool-results-summary")); !strings.Contains(got, "No agent") {
		t.Errorf("empty results say %q", got)
	}
	if doc = ParsePage(t, get("  ", ""), http.StatusOK); strings.TrimSpace(doc.Text()) != "" {
		t.Errorf("a blank search shows %q", doc.Text())
	}

	// Logged out: sent to log in, no results.
	resp = e.Visitor().Do(http.MethodGet, "/register/tools?tool_q=zeta", nil)
	if resp.StatusCode == http.StatusOK {
		t.Errorf("logged out: status %d, want a redirect to log in", resp.StatusCode)
	}
}

// TestToolPickerWithoutJS: without JavaScript the picker's Search brings
// the form back with the results, every typed value kept, and Add with the
// agent's id on a new line of Tools, which saving then stores.
func TestToolPickerWithoutJS(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	calc := e.SeedAgent("", SimpleInput("zeta-calc", "Zeta Calculator", "zeta")).Record.ID
	llm := []string{"backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_model", "gpt-x",
		"backend_tools", "https://tools.example.com/mcp", "tool_q", "zeta"}

	doc := ParsePage(t, e.PostForm("/register", RegisterForm(append(llm, "action", "find-tools")...)), http.StatusOK)
	if v, _ := InputValue(doc, "display_name"); v != "Form Bot" {
		t.Errorf("display name after Search = %q", v)
	}
	if n := doc.Find(fmt.Sprintf(`[data-testid="tool-result"][data-agent-id=%q] [data-testid="tool-add"]`, calc)).Length(); n != 1 {
		t.Fatalf("Search shows %d Add buttons for the agent, want 1", n)
	}

	doc = ParsePage(t, e.PostForm("/register", RegisterForm(append(llm, "add_tool", calc)...)), http.StatusOK)
	if got := MustTestid(t, doc, "backend-tools").Text(); got != "https://tools.example.com/mcp\n"+calc {
		t.Errorf("Tools after Add = %q", got)
	}
	if doc.Find(fmt.Sprintf(`[data-testid="tool-result"][data-agent-id=%q] [data-testid="tool-added"]`, calc)).Length() != 1 {
		t.Error("the added agent is not marked added")
	}

	resp := e.PostForm("/register", RegisterForm(append(llm[:len(llm)-4], "backend_tools", "https://tools.example.com/mcp\n"+calc)...))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || len(b.Tools) != 2 || b.Tools[1].Agent != calc {
		t.Fatalf("stored tools %v, %v", b.Tools, err)
	}

	// The edit form's picker too: Add brings it back with the line added,
	// an id listed already is not added twice.
	other := e.SeedAgent("", SimpleInput("zeta-other", "Zeta Other", "zeta")).Record.ID
	edit := "/account/agents/" + id + "/edit"
	doc = ParsePage(t, e.PostForm(edit, RegisterForm(append(llm[:6], "backend_tools", "https://tools.example.com/mcp\n"+calc, "tool_q", "zeta", "add_tool", other)...)), http.StatusOK)
	if got := MustTestid(t, doc, "backend-tools").Text(); got != "https://tools.example.com/mcp\n"+calc+"\n"+other {
		t.Errorf("edit form Tools after Add = %q", got)
	}
	doc = ParsePage(t, e.PostForm(edit, RegisterForm(append(llm[:6], "backend_tools", calc, "add_tool", calc)...)), http.StatusOK)
	if got := MustTestid(t, doc, "backend-tools").Text(); got != calc {
		t.Errorf("Add of a listed id: Tools = %q, want it once", got)
	}
}
