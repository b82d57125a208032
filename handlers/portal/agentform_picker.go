package portal

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// The tool picker under an llm agent's Tools field (web toolPicker): it
// searches the catalogue as /agents does and offers what it finds, each
// with an Add button that puts the agent's id on a line of the field.
const (
	// actionFindTools is the picker's Search button without JavaScript
	// (name=action): the form comes back with the results.
	actionFindTools = "find-tools"
	// toolPickerResults is how many listings the picker shows; it reads
	// toolPickerScan of the search's best to choose them.
	toolPickerResults = 8
	toolPickerScan    = 40
)

// PageToolPicker is the picker's fragment (GET /register/tools): the
// listings matching tool_q, the ones already named in backend_tools (the
// field, which htmx sends along) marked added. A blank search clears the
// results.
func (p *Pages) PageToolPicker(w http.ResponseWriter, r *http.Request) {
	vals := r.URL.Query()
	v := p.toolPicker(r.Context(), vals.Get("tool_q"), listedAgents(vals.Get("backend_tools")))
	w.Header().Add("Vary", "HX-Request")
	if !v.Searched {
		p.render(w, r, http.StatusOK, templ.NopComponent)
		return
	}
	p.render(w, r, http.StatusOK, web.ToolResults(v))
}

// toolPicker runs the picker's search for q. listed are the agent ids the
// Tools field names already.
func (p *Pages) toolPicker(ctx context.Context, q string, listed map[string]bool) web.ToolPickerView {
	v := web.ToolPickerView{Q: q}
	if strings.TrimSpace(q) == "" {
		return v
	}
	v.Searched = true
	// The search of /agents, its validation included.
	sq, err := httpkit.ParseSearchQuery(url.Values{"q": {q}, "limit": {strconv.Itoa(toolPickerScan)}})
	if err != nil {
		v.Error = searchErrorText(err)
		return v
	}
	page, err := p.Catalog.SearchAgents(ctx, sq)
	if err != nil {
		if ctx.Err() == nil {
			p.Logger.WarnContext(ctx, "tool picker search failed", "err", err)
		}
		v.Error = "The search failed; try again in a moment, or type the agent's id in Tools."
		return v
	}
	var picks []store.Listing
	for _, g := range groupListings(page.Listings) {
		if l := g[0]; !catalogueOnly(l, p.now()) {
			picks = append(picks, l)
		}
	}
	// Those that answer now first, MCP servers before other agents in
	// each part (toolRank); else the search's own order.
	slices.SortStableFunc(picks, func(a, b store.Listing) int { return toolRank(a) - toolRank(b) })
	hosts := p.hostLabels(ctx, picks[:min(len(picks), toolPickerResults)])
	for _, l := range picks[:min(len(picks), toolPickerResults)] {
		v.Results = append(v.Results, p.toolResult(l, hosts, listed[l.Record.ID]))
	}
	return v
}

// toolResult is how the picker shows l.
func (p *Pages) toolResult(l store.Listing, hosts map[string]store.NodeLabel, added bool) web.ToolResult {
	r := l.Record
	res := web.ToolResult{
		ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Host: p.hostView(l, hosts),
		Kind: "agent", Status: l.Status, State: l.Health.State, Askable: askable(l), Added: added,
	}
	names := make([]string, 0, len(r.Skills))
	for _, s := range r.Skills {
		names = append(names, cmp.Or(s.Name, s.ID))
	}
	switch {
	case isMCP(l):
		// An MCP listing's skills are the tools its record lists.
		res.Kind = "MCP server"
		res.OffersLabel, res.Offers = "Tools", strings.Join(names, ", ")
	case len(names) > 0:
		res.OffersLabel, res.Offers = "Skills", strings.Join(names, ", ")
	}
	if res.Offers == "" {
		res.OffersLabel, res.Offers = "About", r.Description
	}
	return res
}

// toolRank orders the picker's results: answering MCP servers, answering
// agents, then those that would not answer now.
func toolRank(l store.Listing) int {
	n := 0
	if !askable(l) {
		n += 2
	}
	if !isMCP(l) {
		n++
	}
	return n
}

// isMCP: l is an MCP server's listing (its tag says so, as imports from
// the MCP Registry do).
func isMCP(l store.Listing) bool { return slices.Contains(l.Record.Tags, "mcp") }

// askable: a message sent to l now would be answered, as far as the hub
// knows (its node online, the agent not failing).
func askable(l store.Listing) bool {
	return l.Status == store.StatusOnline && l.Health.State != agent.HealthFailing
}

// catalogueOnly: l is a catalogue listing no node answers for (an MCP
// Registry server with only an install line), which cannot be a tool.
func catalogueOnly(l store.Listing, now time.Time) bool {
	if slices.Contains(l.Record.Tags, "not-hosted") {
		return true
	}
	o := agent.OriginOf(l.Envelope, now)
	return o != nil && o.Install != ""
}

// listedAgents are the agent ids the Tools field names, as parseTools
// reads it.
func listedAgents(text string) map[string]bool {
	tools, _ := parseTools(text)
	m := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t.Agent != "" {
			m[t.Agent] = true
		}
	}
	return m
}

// addToolLine is the Tools field with id on a line of its own at the end,
// unless a line names it already (app.js's addToolLine does the same).
func addToolLine(text, id string) string {
	if listedAgents(text)[id] {
		return text
	}
	text = strings.TrimRight(text, " \t\r\n")
	if text == "" {
		return id
	}
	return text + "\n" + id
}

// pickTools answers the picker's buttons in a form sent without
// JavaScript: Search (action=find-tools) and Add (add_tool=<id>) bring
// the form back with the results, Add with the id on a new line of
// Tools. It reports whether the request was one of them.
func (p *Pages) pickTools(r *http.Request, v *web.AgentFormView) bool {
	f := r.PostForm
	add := strings.TrimSpace(f.Get("add_tool"))
	if f.Get("action") != actionFindTools && add == "" {
		return false
	}
	// The field as parseTools reads it, secrets left out as after any
	// error, whichever kind is chosen.
	tools, dropped := parseTools(f.Get("backend_tools"))
	v.Backend.Tools, v.Backend.ToolSecretDropped = toolsText(tools), dropped
	if add != "" && agent.ValidID(add) {
		v.Backend.Tools = addToolLine(v.Backend.Tools, add)
	}
	v.Picker = p.toolPicker(r.Context(), f.Get("tool_q"), listedAgents(v.Backend.Tools))
	return true
}
