package ard

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Entry types (media types of the artifact an entry points at).
const (
	TypeA2A      = "application/a2a-agent-card+json"
	TypeMCP      = "application/mcp-server-card+json"
	TypeRegistry = "application/ai-registry+json"
	TypeCatalog  = "application/ai-catalog+json"
)

func knownType(t string) bool { return t == TypeA2A || t == TypeMCP }

// Entry is an ARD catalog entry (ai-catalog.schema.json's catalogEntry)
// with a search result's score and source. MediaType repeats Type for
// readers of the Agent-Card AI Catalog draft, which names it so.
type Entry struct {
	Identifier   string         `json:"identifier"`
	DisplayName  string         `json:"displayName"`
	Type         string         `json:"type"`
	MediaType    string         `json:"mediaType"`
	URL          string         `json:"url,omitempty"`
	Data         any            `json:"data,omitempty"`
	Description  string         `json:"description,omitempty"`
	Tags         []string       `json:"tags,omitempty"`
	Capabilities []string       `json:"capabilities,omitempty"`
	Version      string         `json:"version,omitempty"`
	UpdatedAt    string         `json:"updatedAt,omitempty"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Score        int            `json:"score"`
	Source       string         `json:"source,omitempty"`
}

// AgentCardURL, ServerCardURL and MCPURL are where a listing's artifacts
// are served (handlers/a2a, handlers/discovery, handlers/mcpserver).
func AgentCardURL(origin, id string) string  { return origin + "/a2a/" + id + "/agent-card.json" }
func ServerCardURL(origin, id string) string { return origin + "/mcp/agents/" + id + "/server-card" }
func MCPURL(origin string) string            { return origin + "/mcp" }

// EntryOf is l as a catalog entry of type t (TypeA2A or TypeMCP), without
// score or source: what the AI Catalog lists too.
func EntryOf(l store.Listing, origin, t string, domains []string) Entry {
	rec := l.Record
	health := l.Health.State
	if health == "" {
		health = agent.HealthUnknown
	}
	ns, url := NamespaceA2A, AgentCardURL(origin, rec.ID)
	if t == TypeMCP {
		ns, url = NamespaceMCP, ServerCardURL(origin, rec.ID)
	}
	e := Entry{
		Identifier:  URNIn(rec.Publisher, ns, rec.Name),
		DisplayName: cmpOr(rec.DisplayName, rec.Name),
		Type:        t,
		MediaType:   t,
		URL:         url,
		Description: rec.Description,
		Tags:        append([]string(nil), rec.Tags...),
		Version:     rec.Version,
		Metadata: map[string]any{
			"agentsite.id":        rec.ID,
			"agentsite.name":      rec.Name,
			"agentsite.publisher": rec.Publisher,
			"agentsite.host":      l.HostPeerID,
			"agentsite.status":    l.Status,
			"agentsite.health":    health,
			"agentsite.verified":  len(domains) > 0,
			"agentsite.page":      origin + "/agents/" + rec.ID,
			"agentsite.mcp":       MCPURL(origin),
		},
	}
	if !l.UpdatedAt.IsZero() {
		e.UpdatedAt = l.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if len(domains) > 0 {
		e.Metadata["agentsite.domains"] = strings.Join(domains, " ")
		e.Metadata["agentsite.domainIdentifier"] = URNIn(domains[0], ns, rec.Name)
	}
	for _, s := range rec.Skills {
		e.Capabilities = append(e.Capabilities, cmpOr(s.Name, s.ID))
	}
	return e
}

func (h *Handler) entry(l store.Listing, origin, t, via string) Entry {
	e := EntryOf(l, origin, t, h.domains(l.Record.Publisher))
	e.Metadata["agentsite.via"] = via
	return e
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// score is how well l matches text and whether it answers now, 0 to 100:
// up to 60 for the match (every word in the title, in the head of the
// description, anywhere), 25 for being online (10 stale), 10 for good
// health (4 degraded), 5 for a verified publisher. It says nothing of
// trust: a verified domain proves who runs a node, not what its agents do.
func score(l store.Listing, verified bool, text string) int {
	rec := l.Record
	words := strings.Fields(strings.ToLower(text))
	match := 40 // no text: every listing matches alike
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
		case inHead == n:
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
	switch l.Health.State {
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
// equals (the page token is the index's: pages do not overlap).
func sortByScore(rs []Entry) {
	slices.SortStableFunc(rs, func(a, b Entry) int { return b.Score - a.Score })
}

// List is GET /agents?filter&orderBy&pageSize&pageToken: deterministic
// browsing (ARD §7.4), newest first or by display name, with the filter
// expression of Appendix A (clauses joined by AND; "field = 'a,b'" is an
// OR of values): displayName, type, publisherId, tags, status, health,
// verified, updatedAfter.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	s := search{q: store.SearchQuery{Cursor: v.Get("pageToken"), Limit: 20, Sort: store.SortNewest}}
	if ps := v.Get("pageSize"); ps != "" {
		n, err := strconv.Atoi(ps)
		if err != nil || n < 1 || n > store.MaxLimit {
			invalid(w, "pageSize must be 1 to %d", store.MaxLimit)
			return
		}
		s.q.Limit = n
	}
	switch ob := strings.ToLower(strings.Join(strings.Fields(v.Get("orderBy")), " ")); ob {
	case "", "updatedat desc", "createdat desc":
	case "displayname", "displayname asc", "name":
		s.q.Sort = store.SortName
	default:
		invalid(w, "orderBy must be displayName or updatedAt DESC")
		return
	}
	filter, after, err := parseExpression(v.Get("filter"))
	if err != nil {
		invalid(w, "filter: %v", err)
		return
	}
	if err := h.parseFilter(&s, filter); err != nil {
		invalid(w, "filter: %v", err)
		return
	}
	if !after.IsZero() {
		prev := s.keep
		s.keep = func(l store.Listing) bool { return l.UpdatedAt.After(after) && (prev == nil || prev(l)) }
	}
	listings, next, err := h.find(r.Context(), s)
	if err != nil {
		h.fault(w, r, err)
		return
	}
	origin := httpkit.Origin(r, h.PublicURL)
	out := ListResponse{Items: []Entry{}, PageToken: next}
	for _, l := range listings {
		for _, t := range s.entryTypes() {
			e := h.entry(l, origin, t, ViaMirror)
			e.Score = 0
			out.Items = append(out.Items, e)
		}
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}
