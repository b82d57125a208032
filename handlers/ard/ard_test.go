package ard_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/handlertest"
)

func search(t *testing.T, env *handlertest.Env, text string, filter map[string]any, extra ...any) (ard.SearchResponse, http.Header) {
	t.Helper()
	body := map[string]any{"query": map[string]any{"text": text, "filter": filter}}
	for i := 0; i+1 < len(extra); i += 2 {
		body[extra[i].(string)] = extra[i+1]
	}
	resp := env.Do(http.MethodPost, "/ard/search", body)
	handlertest.WantStatus(t, resp, http.StatusOK)
	return handlertest.Decode[ard.SearchResponse](t, resp), resp.Header
}

// POST /search finds listings on the AgentHub index, filters by tag,
// status, health and type, scores 0..100 and names each with its URN; the
// mirror says how complete it is.
func TestSearchFiltersAndURNs(t *testing.T) {
	env := handlertest.New(t)
	w := env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot", "weather"))
	env.SeedAgent("", handlertest.SimpleInput("tide-bot", "Tide Bot", "tides"))
	remote := env.SeedRemote("far-bot", "Far Bot", "")
	env.SetHealth(w.Record.ID, agent.Health{State: agent.HealthHealthy})

	all, hdr := search(t, env, "", nil)
	if len(all.Results) != 3 {
		t.Fatalf("all: %d results, want 3: %+v", len(all.Results), all.Results)
	}
	if m := hdr.Get("AgentSite-Mirror"); !strings.Contains(m, "listings=3") || !strings.Contains(m, "shards=8") || !strings.Contains(m, "complete=?0") {
		t.Errorf("AgentSite-Mirror = %q", m)
	}
	if f := hdr.Get("AgentSite-Federation"); !strings.Contains(f, `mode="auto"`) || !strings.Contains(f, "federated=?0") {
		t.Errorf("AgentSite-Federation = %q", f)
	}
	for _, r := range all.Results {
		if r.Score < 0 || r.Score > 100 || r.Metadata["agentsite.via"] != ard.ViaMirror || r.Source != env.TS.URL+"/ard" {
			t.Errorf("%s: score %d via %v source %s", r.DisplayName, r.Score, r.Metadata["agentsite.via"], r.Source)
		}
		if r.Type != ard.TypeA2A || !strings.HasSuffix(r.URL, "/agent-card.json") {
			t.Errorf("%s: type %s url %s", r.DisplayName, r.Type, r.URL)
		}
		id, ok := ard.ParseURN(r.Identifier)
		if !ok || id != r.Metadata["agentsite.id"] || !strings.HasPrefix(r.Identifier, "urn:air:"+r.Metadata["agentsite.publisher"].(string)+":a2a:") {
			t.Errorf("identifier %s → %s %v", r.Identifier, id, ok)
		}
	}

	got, _ := search(t, env, "weather", map[string]any{"tags": []string{"weather"}})
	if len(got.Results) != 1 || got.Results[0].Metadata["agentsite.id"] != w.Record.ID || got.Results[0].Metadata["agentsite.health"] != agent.HealthHealthy {
		t.Fatalf("weather: %+v", got.Results)
	}
	if got.Results[0].Score < 90 {
		t.Errorf("a title match, online and healthy scores %d, want ≥ 90", got.Results[0].Score)
	}
	if h, _ := search(t, env, "", map[string]any{"health": "healthy"}); len(h.Results) != 1 {
		t.Errorf("health filter: %d results", len(h.Results))
	}
	if s, _ := search(t, env, "", map[string]any{"status": []string{"offline"}}); len(s.Results) != 0 {
		t.Errorf("status offline: %d results", len(s.Results))
	}
	// No publisher proved a domain here.
	if v, _ := search(t, env, "", map[string]any{"verified": true}); len(v.Results) != 0 {
		t.Errorf("verified: %d results", len(v.Results))
	}
	if p, _ := search(t, env, "", map[string]any{"publisher": remote.Record.Publisher}); len(p.Results) != 1 {
		t.Errorf("publisher: %d results", len(p.Results))
	}
	// The MCP server card is the other representation of each listing.
	mcp, _ := search(t, env, "tide", map[string]any{"type": []string{ard.TypeMCP}})
	if len(mcp.Results) != 1 || mcp.Results[0].Type != ard.TypeMCP || !strings.HasSuffix(mcp.Results[0].URL, "/server-card") ||
		!strings.Contains(mcp.Results[0].Identifier, ":mcp:tide-bot") {
		t.Errorf("type mcp: %+v", mcp.Results)
	}
	if n, _ := search(t, env, "", map[string]any{"type": "application/parquet"}); len(n.Results) != 0 {
		t.Errorf("a type no listing has: %d results", len(n.Results))
	}
	// An identifier names one listing.
	u, _ := search(t, env, "", map[string]any{"identifier": []string{ard.URN(remote.Record)}})
	if len(u.Results) != 1 || u.Results[0].Metadata["agentsite.id"] != remote.Record.ID {
		t.Errorf("by identifier: %+v", u.Results)
	}

	// GET /agents: deterministic browsing with the filter expression.
	resp := env.Do(http.MethodGet, "/ard/agents?filter="+url.QueryEscape("tags = 'tides' AND type = '"+ard.TypeA2A+"'")+"&pageSize=5", nil)
	handlertest.WantStatus(t, resp, http.StatusOK)
	if l := handlertest.Decode[ard.ListResponse](t, resp); len(l.Items) != 1 || l.Items[0].DisplayName != "Tide Bot" {
		t.Errorf("GET /agents tags=tides: %+v", l.Items)
	}
	resp = env.Do(http.MethodGet, "/ard/agents?orderBy=displayName", nil)
	if l := handlertest.Decode[ard.ListResponse](t, resp); len(l.Items) != 3 || l.Items[0].DisplayName != "Far Bot" {
		t.Errorf("GET /agents by name: %+v", l.Items)
	}
	// Paging: a token goes on where the page ended.
	p1, _ := search(t, env, "", nil, "pageSize", 2)
	p2, _ := search(t, env, "", nil, "pageSize", 2, "pageToken", p1.PageToken)
	if len(p1.Results) != 2 || p1.PageToken == "" || len(p2.Results) != 1 {
		t.Errorf("pages: %d then %d", len(p1.Results), len(p2.Results))
	}
}

// Bad searches are refused with INVALID_ARGUMENT and a message naming
// what is wrong.
func TestSearchRefusals(t *testing.T) {
	env := handlertest.New(t)
	for _, c := range []struct{ body, want string }{
		{`{}`, "query is required"},
		{`{"query":{"text":"x","filter":{"status":["sleeping"]}}}`, "status"},
		{`{"query":{"text":"x","filter":{"health":["great"]}}}`, "health"},
		{`{"query":{"text":"x","filter":{"color":["red"]}}}`, `"color" is not supported`},
		{`{"query":{"text":"x","filter":{"tags":["a","b"]}}}`, "one tag"},
		{`{"query":{"text":"x"},"pageSize":1000}`, "pageSize"},
		{`{"query":{"text":"x"},"federation":"everywhere"}`, "federation"},
		{`{"query":{"text":"x"},"federation":"none","federate":true}`, "federate"},
		{`{"query":{"text":"x","filter":{"identifier":"urn:air:example.org:x:y"}}}`, "identifier"},
		{`{"query":{"text":"x"},"deadlineMs":60000}`, "deadlineMs"},
		{`{"query":{"text":"x"},"pageToken":"nope"}`, "cursor"},
		{`{"query":{"text":"x"},"limit":3}`, "unknown field"},
		{`{"query": 5}`, "not a request"},
	} {
		resp := env.Do(http.MethodPost, "/ard/search", c.body)
		handlertest.WantStatus(t, resp, http.StatusBadRequest)
		e := handlertest.Decode[ard.ErrorBody](t, resp)
		if e.ErrorCode != ard.CodeInvalidArgument || !strings.Contains(e.Message, c.want) {
			t.Errorf("%s: %+v, want %q", c.body, e, c.want)
		}
	}
	resp := env.Do(http.MethodGet, "/ard/search", nil)
	handlertest.WantStatus(t, resp, http.StatusMethodNotAllowed)
	resp = env.Do(http.MethodGet, "/ard/agents?filter=nonsense", nil)
	handlertest.WantStatus(t, resp, http.StatusBadRequest)
}

// POST /explore counts facets over what a search finds.
func TestExploreFacets(t *testing.T) {
	env := handlertest.New(t)
	env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot", "weather", "demo"))
	env.SeedAgent("", handlertest.SimpleInput("tide-bot", "Tide Bot", "tides", "demo"))
	explore := func(body string) ard.ExploreResponse {
		resp := env.Do(http.MethodPost, "/ard/explore", body)
		handlertest.WantStatus(t, resp, http.StatusOK)
		return handlertest.Decode[ard.ExploreResponse](t, resp)
	}
	ex := explore(`{"resultType":{"facets":[{"field":"tags"},{"field":"type"},{"field":"status"},{"field":"publisher","limit":1}]}}`)
	tags := map[string]int{}
	for _, v := range ex.Facets["tags"].Buckets {
		tags[v.Value] = v.Count
	}
	if ex.ResultType != "facets" || tags["demo"] != 2 || tags["weather"] != 1 || tags["tides"] != 1 {
		t.Errorf("tags facet = %+v", ex.Facets["tags"])
	}
	if b := ex.Facets["type"].Buckets; len(b) != 1 || b[0].Value != ard.TypeA2A || b[0].Count != 2 {
		t.Errorf("type facet = %+v", b)
	}
	if b := ex.Facets["status"].Buckets; len(b) != 1 || b[0].Value != "online" || b[0].Count != 2 {
		t.Errorf("status facet = %+v", b)
	}
	ex = explore(`{"query":{"text":"tide"},"resultType":{"facets":[{"field":"tags","minCount":1,"limit":1}]}}`)
	if f := ex.Facets["tags"]; len(f.Buckets) != 1 || f.OtherCount != 1 {
		t.Errorf("tags of 'tide', limit 1 = %+v", f)
	}
	resp := env.Do(http.MethodPost, "/ard/explore", `{"resultType":{"facets":[{"field":"price"}]}}`)
	handlertest.WantStatus(t, resp, http.StatusBadRequest)
}
