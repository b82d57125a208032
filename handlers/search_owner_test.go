package handlers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/ard"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
	"github.com/agentsite/agentsite/store"
)

// ownedCatalogue is the store as the one search owner reads it, counting
// the searches that reach it: the surfaces' own catalogue is the store
// itself, so a search counted here went through agent/discover.
type ownedCatalogue struct {
	store.Store
	searches atomic.Int64
}

func (c *ownedCatalogue) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	c.searches.Add(1)
	return c.Store.SearchAgents(ctx, q)
}

// tagNet is a DHT that counts its tag look-ups and the bound each was
// given.
type tagNet struct {
	mu        sync.Mutex
	tags      []string
	providers []int
}

func (n *tagNet) SearchTag(_ context.Context, tag string, maxProviders int) (int, int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tags = append(n.tags, tag)
	n.providers = append(n.providers, maxProviders)
	return 1, 0, nil
}

func (n *tagNet) asked() ([]string, []int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.tags), slices.Clone(n.providers)
}

// TestEverySurfaceSearchesThroughTheOneOwner: the same query gives the
// same agents on GET /api/v1/agents, GET /v0.1/servers, MCP's
// search_agents, ARD's POST /ard/search and a delegating agent's
// find_agents, each answered through agent/discover (its catalogue sees
// every one of them); and every network search (the API's, the portal's,
// ARD's federated one) asks the DHT with the owner's one set of limits.
func TestEverySurfaceSearchesThroughTheOneOwner(t *testing.T) {
	env := New(t)
	for i := range 5 {
		env.SeedAgent("", SimpleInput(fmt.Sprintf("tide-bot-%d", i), fmt.Sprintf("Tide %d", i), "tides"))
	}
	env.SeedAgent("", SimpleInput("weather-bot", "Weather", "weather"))
	owned := &ownedCatalogue{Store: env.Store}
	net := &tagNet{}
	env.UseDiscover(discover.New(discover.Deps{Catalogue: owned, Network: net, Finder: env.Server.Registry,
		Limits: discover.Limits{Providers: 7, Tags: 2}}))

	const q, limit = "tide", 4
	through := func(surface string, search func() []string) []string {
		t.Helper()
		before := owned.searches.Load()
		ids := search()
		if owned.searches.Load() == before {
			t.Errorf("%s answered without the search owner", surface)
		}
		return ids
	}
	api := through("GET /api/v1/agents", func() []string {
		list := Decode[apiwire.AgentList](t, env.Do("GET", "/api/v1/agents?q="+q+"&limit="+fmt.Sprint(limit), nil))
		var ids []string
		for _, a := range list.Agents {
			ids = append(ids, a.ID)
		}
		return ids
	})
	if len(api) != limit {
		t.Fatalf("GET /api/v1/agents found %d agents, want %d", len(api), limit)
	}
	servers := through("GET /v0.1/servers", func() []string {
		list := Decode[mcpregistry.ServerList](t, env.Do("GET", "/v0.1/servers?search="+q+"&limit="+fmt.Sprint(limit), nil))
		var ids []string
		for _, s := range list.Servers {
			ids = append(ids, s.Server.Meta[mcpregistry.AgentMeta].(map[string]any)["id"].(string))
		}
		return ids
	})
	cs, _ := ConnectMCP(t, env.TS.URL+"/mcp", "")
	mcp := through("MCP search_agents", func() []string {
		res := CallTool(t, cs, "search_agents", map[string]any{"q": q, "limit": limit}, "")
		var ids []string
		for _, a := range Structured[apiwire.AgentList](t, res).Agents {
			ids = append(ids, a.ID)
		}
		return ids
	})
	ardIDs := through("POST /ard/search", func() []string {
		got := Decode[ard.SearchResponse](t, env.Do("POST", "/ard/search", map[string]any{"query": map[string]any{"text": q}, "pageSize": limit}))
		var ids []string
		for _, r := range got.Results {
			ids = append(ids, r.Metadata["agentsite.id"].(string))
		}
		slices.SortFunc(ids, func(a, b string) int { return slices.Index(api, a) - slices.Index(api, b) }) // ARD orders by its score
		return ids
	})
	found := through("find_agents", func() []string {
		got, err := env.Server.Chat.FindAgents(t.Context(), q, "")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range got {
			ids = append(ids, a.ID)
		}
		return ids[:min(limit, len(ids))]
	})
	for surface, ids := range map[string][]string{"/v0.1/servers": servers, "search_agents": mcp, "/ard/search": ardIDs, "find_agents": found} {
		if !slices.Equal(ids, api) {
			t.Errorf("%s found %v; /api/v1/agents %v", surface, ids, api)
		}
	}

	// Network searches: every surface asks the DHT with the owner's
	// limits (7 providers a tag, at most 2 tags a round).
	WantStatus(t, env.Do("POST", "/api/v1/network/search?tag=tides", nil), http.StatusOK)
	resp := env.PostForm("/agents/network-search", url.Values{"tag": {"tides", "weather", "maps"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("portal network search: %d", resp.StatusCode)
	}
	federated := map[string]any{"query": map[string]any{"text": "tides weather maps"}, "federate": true}
	WantStatus(t, env.Do("POST", "/ard/search", federated), http.StatusOK)
	tags, providers := net.asked()
	if want := []string{"tides", "tides", "weather", "tides", "weather"}; !sameTags(tags, want) {
		t.Errorf("the DHT was asked for %v; want %v (at most 2 tags a round)", tags, want)
	}
	for i, p := range providers {
		if p != 7 {
			t.Errorf("look-up %d (%s) asked for %d providers; want the owner's 7", i, tags[i], p)
		}
	}
}

// sameTags compares the tags asked, in any order (a round asks its tags
// at once).
func sameTags(got, want []string) bool {
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	return slices.Equal(got, want)
}
