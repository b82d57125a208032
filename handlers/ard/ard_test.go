package ard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/handlertest"
)

func search(t *testing.T, env *handlertest.Env, body any) ard.SearchResponse {
	t.Helper()
	resp := env.Do(http.MethodPost, "/ard/search", body)
	handlertest.WantStatus(t, resp, http.StatusOK)
	return handlertest.Decode[ard.SearchResponse](t, resp)
}

// POST /search finds listings on the AgentHub index, filters by tag,
// status and health, scores 0..100 and names each with its URN; the
// mirror says how complete it is.
func TestSearchFiltersAndURNs(t *testing.T) {
	env := handlertest.New(t)
	w := env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot", "weather"))
	env.SeedAgent("", handlertest.SimpleInput("tide-bot", "Tide Bot", "tides"))
	remote := env.SeedRemote("far-bot", "Far Bot", "")
	env.SetHealth(w.Record.ID, agent.Health{State: agent.HealthHealthy})

	all := search(t, env, map[string]any{})
	if all.Count != 3 || len(all.Results) != 3 {
		t.Fatalf("all: %d results, want 3: %+v", all.Count, all.Results)
	}
	if all.Federation.Mode != ard.ModeAuto || all.Federation.Federated || all.Federation.Mirror.Shards != 8 {
		t.Errorf("federation = %+v", all.Federation)
	}
	if all.Federation.Mirror.Listings != 3 || all.Federation.Mirror.Complete {
		t.Errorf("mirror = %+v (no peers: never complete)", all.Federation.Mirror)
	}
	for _, r := range all.Results {
		if r.Score < 0 || r.Score > 100 || r.Source != ard.SourceMirror {
			t.Errorf("%s: score %d source %s", r.Name, r.Score, r.Source)
		}
		if !strings.HasPrefix(r.URN, "urn:air:"+r.Publisher.PeerID+":agentsite:") {
			t.Errorf("urn %s", r.URN)
		}
		if id, ok := ard.ParseURN(r.URN); !ok || id != r.ID {
			t.Errorf("ParseURN(%s) = %s %v, want %s", r.URN, id, ok, r.ID)
		}
	}

	got := search(t, env, map[string]any{"query": "weather", "filters": map[string]any{"tags": []string{"weather"}}})
	if got.Count != 1 || got.Results[0].ID != w.Record.ID || got.Results[0].Health != agent.HealthHealthy {
		t.Fatalf("weather: %+v", got.Results)
	}
	if got.Results[0].Score < 90 {
		t.Errorf("a title match, online and healthy scores %d, want ≥ 90", got.Results[0].Score)
	}
	if h := search(t, env, map[string]any{"filters": map[string]any{"health": []string{"healthy"}}}); h.Count != 1 {
		t.Errorf("health filter: %d results", h.Count)
	}
	if s := search(t, env, map[string]any{"filters": map[string]any{"status": []string{"offline"}}}); s.Count != 0 {
		t.Errorf("status offline: %d results", s.Count)
	}
	// No publisher proved a domain here.
	if v := search(t, env, map[string]any{"filters": map[string]any{"verified": true}}); v.Count != 0 {
		t.Errorf("verified: %d results", v.Count)
	}
	// A URN names one listing.
	u := search(t, env, map[string]any{"filters": map[string]any{"urn": []string{ard.URN(remote.Record)}}})
	if u.Count != 1 || u.Results[0].ID != remote.Record.ID {
		t.Errorf("by urn: %+v", u.Results)
	}

	// GET /agents is the same search.
	resp := env.Do(http.MethodGet, "/ard/agents?tag=tides&limit=5", nil)
	handlertest.WantStatus(t, resp, http.StatusOK)
	if l := handlertest.Decode[ard.SearchResponse](t, resp); l.Count != 1 || l.Results[0].Name != "tide-bot" {
		t.Errorf("GET /agents?tag=tides: %+v", l.Results)
	}
	// Paging: a cursor goes on where the page ended.
	p1 := search(t, env, map[string]any{"limit": 2})
	p2 := search(t, env, map[string]any{"limit": 2, "cursor": p1.NextCursor})
	if p1.Count != 2 || p1.NextCursor == "" || p2.Count != 1 {
		t.Errorf("pages: %d then %d", p1.Count, p2.Count)
	}
}

// Bad searches are refused with the field that is wrong.
func TestSearchRefusals(t *testing.T) {
	env := handlertest.New(t)
	for _, c := range []struct {
		body  string
		field string
	}{
		{`{"filters":{"status":["sleeping"]}}`, "status"},
		{`{"filters":{"health":["great"]}}`, "health"},
		{`{"limit":1000}`, "limit"},
		{`{"federation":"everywhere"}`, "federation"},
		{`{"federation":"none","federate":true}`, "federate"},
		{`{"filters":{"urn":["urn:air:example.org:x:y"]}}`, "filters.urn"},
		{`{"deadline_ms":60000}`, "deadline_ms"},
		{`{"cursor":"nope"}`, "cursor"},
	} {
		resp := env.Do(http.MethodPost, "/ard/search", c.body)
		handlertest.WantStatus(t, resp, http.StatusBadRequest)
		body := handlertest.Decode[struct {
			Error struct {
				Fields map[string]string `json:"fields"`
			} `json:"error"`
		}](t, resp)
		if body.Error.Fields[c.field] == "" {
			t.Errorf("%s: fields %v, want %s", c.body, body.Error.Fields, c.field)
		}
	}
	resp := env.Do(http.MethodPost, "/ard/search", `{"query": 5}`)
	handlertest.WantStatus(t, resp, http.StatusBadRequest)
	resp = env.Do(http.MethodGet, "/ard/search", nil)
	handlertest.WantStatus(t, resp, http.StatusMethodNotAllowed)
}

// POST /explore counts the tags of what a search finds.
func TestExploreFacets(t *testing.T) {
	env := handlertest.New(t)
	env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot", "weather", "demo"))
	env.SeedAgent("", handlertest.SimpleInput("tide-bot", "Tide Bot", "tides", "demo"))
	resp := env.Do(http.MethodPost, "/ard/explore", map[string]any{})
	handlertest.WantStatus(t, resp, http.StatusOK)
	ex := handlertest.Decode[ard.ExploreResponse](t, resp)
	tags := map[string]int{}
	for _, v := range ex.Facets["tags"] {
		tags[v.Value] = v.Count
	}
	if tags["demo"] != 2 || tags["weather"] != 1 || tags["tides"] != 1 {
		t.Errorf("tags facet = %v", ex.Facets["tags"])
	}
	if len(ex.Facets["status"]) != 1 || ex.Facets["status"][0].Count != 2 {
		t.Errorf("status facet = %v", ex.Facets["status"])
	}
	resp = env.Do(http.MethodPost, "/ard/explore", map[string]any{"query": "tide"})
	ex = handlertest.Decode[ard.ExploreResponse](t, resp)
	if len(ex.Facets["tags"]) != 2 {
		t.Errorf("tags of 'tide' = %v", ex.Facets["tags"])
	}
}
