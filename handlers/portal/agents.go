package portal

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// Tag chips of the search page: the tags of the current results (TagFacets),
// at most searchTagChips; the first visibleTagChips show, the rest are
// behind a "more" control.
const (
	searchTagChips  = 100
	visibleTagChips = 12
)

// statusChoices are the status filter's options; "" is the default
// (every agent whose node is online or quiet). The words are the cards'.
var statusChoices = []web.Option{
	{Value: "", Label: "Online or quiet", Title: "Agents whose node is on the network, or has gone quiet for a while"},
	{Value: store.StatusOnline, Label: "Online only", Title: "Agents whose node is on the network now"},
	{Value: store.StatusStale, Label: "Quiet only", Title: "Agents whose node has been quiet for a while: they may not answer"},
	{Value: store.StatusOffline, Label: "Offline only", Title: "Agents whose node is gone or whose listing expired"},
	{Value: "all", Label: "All, incl. offline"},
}

// healthChoices are the health filter's options; "" is any health.
var healthChoices = []web.Option{
	{Value: "", Label: "Any health"},
	{Value: agent.HealthHealthy, Label: "Available", Title: "It answers now"},
	{Value: agent.HealthDegraded, Label: "Unreliable", Title: "It answers, but slowly or not always"},
	{Value: agent.HealthFailing, Label: "Not answering", Title: "Its node is up but the agent fails"},
	{Value: agent.HealthUnknown, Label: "Not checked yet", Title: "Its node has not checked it yet"},
}

// sortChoices are the orders of the results; without search text both
// are newest first.
var sortChoices = []web.Option{
	{Value: "", Label: "Best match"},
	{Value: store.SortNewest, Label: "Newest"},
	{Value: store.SortName, Label: "Name (A–Z)"},
	{Value: store.SortUsed, Label: "Most used"},
}

// searchState is the search as the visitor typed it, for the form and for
// the links (tag chips, next page) that change one part of it.
type searchState struct {
	q      string
	tags   []string
	status string
	health string
	limit  string
	sort   string
	// verified is "true": only verified publishers' agents.
	verified string
}

func (st searchState) href(tags []string, cursor string) string {
	v := url.Values{}
	if st.q != "" {
		v.Set("q", st.q)
	}
	for _, t := range tags {
		v.Add("tag", t)
	}
	if st.status != "" {
		v.Set("status", st.status)
	}
	if st.health != "" {
		v.Set("health", st.health)
	}
	if st.limit != "" {
		v.Set("limit", st.limit)
	}
	if st.sort != "" {
		v.Set("sort", st.sort)
	}
	if st.verified != "" {
		v.Set("verified", st.verified)
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if len(v) == 0 {
		return "/agents"
	}
	return "/agents?" + v.Encode()
}

// toggled returns the selected tags with tag added or removed.
func (st searchState) toggled(tag string) []string {
	out := make([]string, 0, len(st.tags)+1)
	found := false
	for _, t := range st.tags {
		if t == tag {
			found = true
			continue
		}
		out = append(out, t)
	}
	if !found {
		out = append(out, tag)
	}
	return out
}

// PageAgents is the search page. Under htmx it answers with only the part
// being swapped: the results (HX-Target: results) or the next page of cards
// (HX-Target: pager).
func (p *Pages) PageAgents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	vals := r.URL.Query()
	q, qerr := httpkit.ParseSearchQuery(vals)
	st := searchState{
		q:      vals.Get("q"),
		tags:   q.Tags,
		status: strings.Join(nonEmpty(vals["status"]), ","),
		health: strings.Join(nonEmpty(vals["health"]), ","),
		limit:  vals.Get("limit"),
		sort:   vals.Get("sort"),
	}
	if vals.Get("verified") == "true" && p.Verified != nil {
		st.verified = "true"
		q.Publishers = p.Verified.Publishers()
	}
	// Verified publishers only, and none is: nothing to find.
	noneVerified := st.verified != "" && len(q.Publishers) == 0
	res := web.ResultsView{Filtered: st.q != "" || len(st.tags) > 0 || st.status != "" || st.health != "" || st.verified != "", Count: -1}
	status := http.StatusOK
	if qerr != nil {
		res.Error, status = searchErrorText(qerr), http.StatusBadRequest
	} else if !noneVerified {
		page, err := p.Discover.Search(ctx, q)
		switch {
		case errors.Is(err, store.ErrBadCursor):
			res.Error, status = "The page link is no longer valid; start the search again.", http.StatusBadRequest
		case err != nil:
			p.RenderError(w, r, err)
			return
		default:
			res.Agents = p.cards(r.Context(), page.Listings)
			if !res.Filtered {
				// The default view (online and stale, any health) is
				// exactly what Stats counts; a filtered search is not
				// counted (no count query), and shows its page's size.
				stats, err := p.Catalog.Stats(ctx)
				if err != nil {
					p.RenderError(w, r, err)
					return
				}
				res.Count = stats.Agents
			}
			if page.NextCursor != "" {
				res.NextHref = st.href(st.tags, page.NextCursor)
			}
		}
	}
	w.Header().Add("Vary", "HX-Request, HX-Target")
	target := hxTarget(r)
	if target == "pager" {
		p.render(w, r, http.StatusOK, web.MoreResults(res))
		return
	}
	// The chips count the tags of what the filter finds now, so none of
	// them leads to an empty page; an invalid query gets the overall tags.
	var tags []store.TagCount
	var err error
	switch {
	case noneVerified:
	case qerr == nil:
		tags, err = p.Catalog.TagFacets(ctx, q, searchTagChips)
	default:
		tags, err = p.Catalog.ListTags(ctx, searchTagChips)
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := web.AgentsView{
		Q:             st.q,
		Tags:          st.tags,
		StatusOptions: selectOptions(statusChoices, st.status),
		HealthOptions: selectOptions(healthChoices, st.health),
		SortOptions:   selectOptions(sortChoices, sortValue(st.sort)),
		VerifiedOptions: func() []web.Option {
			if p.Verified == nil {
				return nil
			}
			return selectOptions(verifiedChoices, st.verified)
		}(),
		Chips:        tagChips(st, tagCounts(tags)),
		VisibleChips: visibleTagChips,
		Results:      res,
	}
	if res.Filtered {
		v.ClearHref = "/agents"
	}
	if target == "results" {
		// The address htmx pushes is the search as a link would say it:
		// the form sends every control, empty ones too (?q=zebr&status=&…).
		w.Header().Set("HX-Push-Url", st.href(st.tags, ""))
		// htmx swaps only what 2xx responses carry by default; the message
		// of an invalid query must still show.
		p.render(w, r, http.StatusOK, web.ResultsPartial(v))
		return
	}
	v.Page = p.page(r, p.viewer(r), "Agents", "agents")
	p.render(w, r, status, web.AgentsPage(v))
}

// sortValue is the sort select's value: relevance is its default "".
func sortValue(sort string) string {
	if sort == store.SortRelevance {
		return ""
	}
	return sort
}

func nonEmpty(ss []string) []string {
	out := ss[:0:0]
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// selectOptions marks the selected choice of a filter select.
func selectOptions(choices []web.Option, selected string) []web.Option {
	out := make([]web.Option, 0, len(choices)+1)
	found := false
	for _, o := range choices {
		o.Selected = o.Value == selected
		found = found || o.Selected
		out = append(out, o)
	}
	if !found {
		// A combination from a hand-written URL ("online,offline"): keep it.
		out = append(out, web.Option{Value: selected, Label: selected, Selected: true})
	}
	return out
}

// tagChips offers the tags of the current results (most used first), plus
// any selected tag that is not among them, selected ones first.
func tagChips(st searchState, top []web.TagCount) []web.TagChip {
	selected := map[string]bool{}
	for _, t := range st.tags {
		selected[t] = true
	}
	chips := make([]web.TagChip, 0, len(top)+len(st.tags))
	seen := map[string]bool{}
	for _, t := range top {
		seen[t.Tag] = true
		chips = append(chips, web.TagChip{Tag: t.Tag, Count: t.Count, Selected: selected[t.Tag]})
	}
	for _, t := range st.tags {
		if !seen[t] {
			chips = append(chips, web.TagChip{Tag: t, Selected: true})
		}
	}
	sort.SliceStable(chips, func(i, j int) bool { return chips[i].Selected && !chips[j].Selected })
	for i := range chips {
		chips[i].Href = st.href(st.toggled(chips[i].Tag), "")
	}
	return chips
}

// searchQueryNames are the names people know the query parameters by.
var searchQueryNames = map[string]string{
	"q": "Search text", "tag": "Tag", "status": "Status", "health": "Health", "limit": "Page size", "cursor": "Page link", "sort": "Sort",
}

// searchErrorText turns query validation errors into one sentence per
// parameter, for the results area.
func searchErrorText(err error) string {
	var ve *agent.ValidationError
	if !errors.As(err, &ve) {
		return "The search could not be understood."
	}
	keys := make([]string, 0, len(ve.Fields))
	for k := range ve.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		name := searchQueryNames[k]
		if name == "" {
			name = k
		}
		parts = append(parts, name+": "+ve.Fields[k]+".")
	}
	return strings.Join(parts, " ")
}

// SubmitNetworkSearch asks the network for providers of the selected tags
// (one round, discover.Lookup, within the node's limits), pulls their
// listings into the cache (verified), and goes back to the filtered list
// with a summary.
func (p *Pages) SubmitNetworkSearch(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		p.RenderError(w, r, err)
		return
	}
	var tags []string
	for _, t := range r.PostForm["tag"] {
		t = strings.ToLower(strings.TrimSpace(t))
		if agent.IsSlug(t, 1, agent.MaxTagLen) {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		p.RenderError(w, r, httpkit.Errorf(http.StatusBadRequest, httpkit.CodeBadQuery, "Choose a tag to search the network for."))
		return
	}
	round, err := p.Discover.Lookup(r.Context(), discover.Ask{Tags: tags})
	if err != nil || (round.Err != nil && round.Providers == 0) {
		p.RenderError(w, r, httpkit.NetworkSearchFailed(err))
		return
	}
	tags = round.Tags
	providers, changed := round.Providers, round.Records
	p.Sessions.Flash(r.Context(), fmt.Sprintf("Network search: %d node(s) answered, %d new or updated listing(s).", providers, changed))
	v := url.Values{"tag": tags}
	http.Redirect(w, r, "/agents?"+v.Encode(), http.StatusSeeOther)
}
