package ard

import (
	"net/http"
	"slices"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Resource types.
const (
	TypeAgent = "a2a-agent"
)

// resource is l as a registry entry, scored against the query text.
func (h *Handler) resource(l store.Listing, origin, text string) Resource {
	rec := l.Record
	health := l.Health.State
	if health == "" {
		health = agent.HealthUnknown
	}
	res := Resource{
		URN:         URN(rec),
		Type:        TypeAgent,
		ID:          rec.ID,
		Name:        rec.Name,
		DisplayName: rec.DisplayName,
		Description: rec.Description,
		Version:     rec.Version,
		Tags:        append([]string{}, rec.Tags...),
		Endpoints: Endpoints{
			A2ACard:    origin + "/a2a/" + rec.ID + "/agent-card.json",
			MCP:        origin + "/mcp",
			ServerCard: origin + "/mcp/agents/" + rec.ID + "/server-card",
			Page:       origin + "/agents/" + rec.ID,
		},
		Status:    l.Status,
		Health:    health,
		Publisher: Publisher{PeerID: rec.Publisher, Host: l.HostPeerID},
		Source:    SourceMirror,
		UpdatedAt: l.UpdatedAt.UTC(),
	}
	for _, s := range rec.Skills {
		res.Skills = append(res.Skills, Skill{ID: s.ID, Name: s.Name, Description: s.Description})
	}
	if h.Publishers != nil {
		if ds := h.Publishers.Domains(rec.Publisher); len(ds) > 0 {
			res.Publisher.Verified, res.Publisher.Domains = true, ds
			for _, d := range ds {
				res.Aliases = append(res.Aliases, DomainURN(d, rec))
			}
		}
	}
	res.Links = []LinkJSON{
		{Rel: "a2a-card", Href: res.Endpoints.A2ACard, Type: "application/json"},
		{Rel: "mcp", Href: res.Endpoints.MCP},
		{Rel: "alternate", Href: res.Endpoints.Page, Type: "text/html"},
	}
	res.Score = score(rec, l, health, res.Publisher.Verified, text)
	return res
}

// score is how well l matches text and whether it answers now, 0 to 100:
// up to 60 for the match (every query word in the title, in the head of
// the description, anywhere), 25 for being online (10 stale), 10 for good
// health (4 degraded), 5 for a verified publisher. It says nothing of
// trust: a verified domain proves who runs a node, not what its agents do.
func score(rec agent.Record, l store.Listing, health string, verified bool, text string) int {
	words := strings.Fields(strings.ToLower(text))
	match := 40 // no query: every listing matches alike
	if len(words) > 0 {
		title := strings.ToLower(rec.DisplayName + " " + rec.Name)
		desc := strings.ToLower(rec.Description)
		head := desc
		if len(head) > 200 {
			head = head[:200]
		}
		all := title + " " + desc + " " + strings.ToLower(strings.Join(rec.Tags, " "))
		inTitle, inHead, inAll := 0, 0, 0
		for _, w := range words {
			if strings.Contains(title, w) {
				inTitle++
			}
			if strings.Contains(head, w) {
				inHead++
			}
			if strings.Contains(all, w) {
				inAll++
			}
		}
		n := len(words)
		switch {
		case inTitle == n:
			match = 60
		case inHead == n || inTitle+inHead >= n:
			match = 45
		default:
			match = 20 + 25*inAll/n
		}
	}
	s := match
	switch l.Status {
	case store.StatusOnline:
		s += 25
	case store.StatusStale:
		s += 10
	}
	switch health {
	case agent.HealthHealthy:
		s += 10
	case agent.HealthDegraded:
		s += 4
	}
	if verified {
		s += 5
	}
	return min(max(s, 0), 100)
}

// sortByScore orders a page by score, keeping the index's order between
// equals (the cursor is the index's: pages do not overlap).
func sortByScore(rs []Resource) {
	slices.SortStableFunc(rs, func(a, b Resource) int { return b.Score - a.Score })
}

// ExploreRequest is the body of POST /explore.
type ExploreRequest struct {
	Query   string  `json:"query"`
	Filters Filters `json:"filters"`
	// Limit bounds each facet's values (default 20, at most 100).
	Limit int `json:"limit,omitempty"`
}

// ExploreResponse is the facets of what a search would find.
type ExploreResponse struct {
	Facets     map[string][]FacetValue `json:"facets"`
	Federation Federation              `json:"federation"`
}

// FacetValue is a facet's value and how many resources have it.
type FacetValue struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Explore is POST /explore: the tags (and, for the whole catalogue, the
// statuses) of what a search finds, from the mirror.
func (h *Handler) Explore(w http.ResponseWriter, r *http.Request) {
	var req ExploreRequest
	if err := decodeBody(r, &req); err != nil {
		httpkit.WriteJSONError(w, err)
		return
	}
	q, err := h.query(SearchRequest{Query: req.Query, Filters: req.Filters, Limit: req.Limit})
	if err != nil {
		h.badQuery(w, err)
		return
	}
	ctx := r.Context()
	tags, err := h.Catalog.TagFacets(ctx, q, q.Limit)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	out := ExploreResponse{Facets: map[string][]FacetValue{"tags": {}, "type": {}}, Federation: Federation{Mode: ModeNone}}
	for _, t := range tags {
		out.Facets["tags"] = append(out.Facets["tags"], FacetValue{Value: t.Tag, Count: t.Count})
	}
	if out.Federation.Mirror, err = h.mirrorState(ctx); err != nil {
		h.fault(w, r, err)
		return
	}
	if q.Q == "" && len(q.Tags) == 0 && len(q.Health) == 0 && len(q.Statuses) == 0 {
		counts, err := h.Catalog.CountByStatus(ctx)
		if err != nil {
			h.fault(w, r, err)
			return
		}
		total := 0
		for _, st := range []string{store.StatusOnline, store.StatusStale, store.StatusOffline} {
			if counts[st] > 0 {
				out.Facets["status"] = append(out.Facets["status"], FacetValue{Value: st, Count: counts[st]})
				if st != store.StatusOffline {
					total += counts[st]
				}
			}
		}
		out.Facets["type"] = append(out.Facets["type"], FacetValue{Value: TypeAgent, Count: total})
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}
