package ard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentsite/agentsite/store"
)

// clauseRe is one clause of a GET /agents filter: field, operator, value
// (quoted or bare).
var clauseRe = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_.]*)\s*(=|>)\s*(?:'([^']*)'|"([^"]*)"|(\S+))\s*$`)

// andRe splits clauses.
var andRe = regexp.MustCompile(`(?i)\s+AND\s+`)

// parseExpression reads Appendix A's filter expression into the query
// model's filter keys, and updatedAfter (or createdAfter) apart.
func parseExpression(expr string) (map[string]json.RawMessage, time.Time, error) {
	out := map[string]json.RawMessage{}
	var after time.Time
	if strings.TrimSpace(expr) == "" {
		return out, after, nil
	}
	if len(expr) > 1024 {
		return nil, after, fmt.Errorf("at most 1024 bytes")
	}
	for _, clause := range andRe.Split(strings.TrimSpace(expr), -1) {
		m := clauseRe.FindStringSubmatch(clause)
		if m == nil {
			return nil, after, fmt.Errorf("%q is not a clause like type = 'application/a2a-agent-card+json'", clause)
		}
		field, op, val := m[1], m[2], m[3]+m[4]+m[5]
		if (op == ">") != (field == "updatedAfter" || field == "createdAfter") {
			return nil, after, fmt.Errorf("%s: use = (> only with updatedAfter or createdAfter)", field)
		}
		var vals []string
		for _, v := range strings.Split(val, ",") {
			if v = strings.TrimSpace(v); v != "" {
				vals = append(vals, v)
			}
		}
		switch field {
		case "updatedAfter", "createdAfter":
			t, err := time.Parse(time.RFC3339, val)
			if err != nil {
				return nil, after, fmt.Errorf("%s: an ISO 8601 time like 2026-01-01T00:00:00Z", field)
			}
			after = t
			continue
		case "publisherId":
			field = "publisher"
		case "displayName":
			field = "text"
		}
		raw, _ := json.Marshal(vals)
		out[field] = raw
	}
	return out, after, nil
}

// ExploreRequest is the body of POST /explore.
type ExploreRequest struct {
	Query      *QueryModel `json:"query,omitempty"`
	ResultType struct {
		Facets []FacetRequest `json:"facets"`
	} `json:"resultType"`
}

// FacetRequest asks for one facet.
type FacetRequest struct {
	Field    string `json:"field"`
	Limit    int    `json:"limit,omitempty"`
	MinCount int    `json:"minCount,omitempty"`
}

// ExploreResponse is the facets of what a search finds.
type ExploreResponse struct {
	ResultType string                 `json:"resultType"`
	Facets     map[string]FacetResult `json:"facets"`
}

// FacetResult is one facet's buckets.
type FacetResult struct {
	Buckets    []Bucket `json:"buckets"`
	OtherCount int      `json:"otherCount,omitempty"`
}

// Bucket is a facet's value and how many entries have it.
type Bucket struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// maxExploreScan bounds the listings a facet other than tags counts (the
// index counts tags itself); past it the counts are of the first ones,
// and the AgentSite-Explore header says so.
const maxExploreScan = 5000

// Explore is POST /explore (ARD §7.3): facets over the matched set, from
// this registry alone (Explore does not federate). Fields: tags (counted
// by the index), type, publisher, status, health, verified.
func (h *Handler) Explore(w http.ResponseWriter, r *http.Request) {
	var req ExploreRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.ResultType.Facets) == 0 {
		invalid(w, "resultType.facets is required: [{\"field\": \"type\"}]")
		return
	}
	s := search{q: store.SearchQuery{Limit: store.MaxLimit}}
	var filter map[string]json.RawMessage
	if req.Query != nil {
		s.q.Q, filter = req.Query.Text, req.Query.Filter
	}
	if err := h.parseFilter(&s, filter); err != nil {
		invalid(w, "%v", err)
		return
	}
	ctx := r.Context()
	out := ExploreResponse{ResultType: "facets", Facets: map[string]FacetResult{}}
	var scanned []store.Listing
	partial, didScan := false, false
	for _, f := range req.ResultType.Facets {
		limit := f.Limit
		if limit <= 0 {
			limit = 20
		}
		if limit > store.MaxLimit {
			limit = store.MaxLimit
		}
		counts := map[string]int{}
		switch f.Field {
		case "tags":
			if s.keep == nil && len(s.ids) == 0 {
				tags, err := h.Catalog.TagFacets(ctx, s.q, store.MaxLimit)
				if err != nil {
					h.fault(w, r, err)
					return
				}
				for _, t := range tags {
					counts[t.Tag] = t.Count
				}
				break
			}
			fallthrough
		case "type", "publisher", "status", "health", "verified":
			if !didScan {
				var err error
				if scanned, partial, err = h.scan(ctx, s); err != nil {
					h.fault(w, r, err)
					return
				}
				didScan = true
			}
			for _, l := range scanned {
				for _, v := range h.facetValues(l, f.Field, s.entryTypes()) {
					counts[v]++
				}
			}
		default:
			invalid(w, "facet field %q is not supported here: use type, tags, publisher, status, health or verified", f.Field)
			return
		}
		out.Facets[f.Field] = buckets(counts, limit, max(f.MinCount, 1))
	}
	if partial {
		w.Header().Set("AgentSite-Explore", fmt.Sprintf("partial=?1, counted=%d", len(scanned)))
	}
	mirror, err := h.mirrorState(ctx)
	if err == nil {
		w.Header().Set("AgentSite-Mirror", mirror.Header())
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

// scan reads the matched set, at most maxExploreScan listings.
func (h *Handler) scan(ctx context.Context, s search) ([]store.Listing, bool, error) {
	var out []store.Listing
	for {
		ls, next, err := h.find(ctx, s)
		if err != nil {
			return nil, false, err
		}
		out = append(out, ls...)
		if next == "" {
			return out, false, nil
		}
		if len(out) >= maxExploreScan {
			return out, true, nil
		}
		s.q.Cursor = next
	}
}

func (h *Handler) facetValues(l store.Listing, field string, types []string) []string {
	switch field {
	case "type":
		return types
	case "tags":
		return l.Record.Tags
	case "publisher":
		if ds := h.domains(l.Record.Publisher); len(ds) > 0 {
			return ds[:1]
		}
		return []string{l.Record.Publisher}
	case "status":
		return []string{l.Status}
	case "health":
		if l.Health.State == "" {
			return []string{"unknown"}
		}
		return []string{l.Health.State}
	case "verified":
		if len(h.domains(l.Record.Publisher)) > 0 {
			return []string{"true"}
		}
		return []string{"false"}
	}
	return nil
}

// buckets is counts, most first then by value, at most limit, those below
// minCount left out; the rest counted in OtherCount.
func buckets(counts map[string]int, limit, minCount int) FacetResult {
	res := FacetResult{Buckets: []Bucket{}}
	for v, n := range counts {
		if n >= minCount {
			res.Buckets = append(res.Buckets, Bucket{Value: v, Count: n})
		}
	}
	slices.SortFunc(res.Buckets, func(a, b Bucket) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
	if len(res.Buckets) > limit {
		for _, b := range res.Buckets[limit:] {
			res.OtherCount += b.Count
		}
		res.Buckets = res.Buckets[:limit]
	}
	return res
}
