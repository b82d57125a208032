package mcpregistry_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
)

// A listing imported from the MCP Registry is served under its upstream
// name and version, found by that name, with the AgentSite name and the
// origin in _meta (before, exports were named agentsite.<id>/io-github-…);
// answers still fit the registry's API.
func TestImportedServerKeepsItsName(t *testing.T) {
	doc := spec(t)
	e := handlertest.New(t)
	in := handlertest.SimpleInput("io-github-user-weather", "Weather")
	in.Version = "1.0.2"
	in.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.user/weather", Version: "1.0.2-beta+build.7"}
	l := e.SeedAgent("", in)
	plain := e.SeedAgent("", handlertest.SimpleInput("plain-bot", "Plain"))

	_, body := get(t, e, doc, "/v0.1/servers", "/v0.1/servers?search=weather", nil)
	var list mcpregistry.ServerList
	if err := json.Unmarshal(body, &list); err != nil || len(list.Servers) != 1 {
		t.Fatalf("list: %s (%v)", body, err)
	}
	s := list.Servers[0].Server
	meta, _ := s.Meta[mcpregistry.AgentMeta].(map[string]any)
	if s.Name != "io.github.user/weather" || s.Version != "1.0.2-beta+build.7" || meta["agentsite_name"] != mcpregistry.ServerName(l.Record) {
		t.Errorf("server = %s %s, meta %v", s.Name, s.Version, meta)
	}
	if o, _ := meta["origin"].(map[string]any); o["registry"] != agent.OriginMCPRegistry {
		t.Errorf("origin = %v", meta["origin"])
	}
	// Found by its upstream name.
	path := "/v0.1/servers/" + url.PathEscape("io.github.user/weather") + "/versions/latest"
	code, body := get(t, e, doc, "/v0.1/servers/{serverName}/versions/{version}", path,
		map[string]string{"serverName": "io.github.user/weather", "version": "latest"})
	if code != 200 {
		t.Fatalf("by upstream name: %d %s", code, body)
	}
	// A listing of AgentSite's own keeps its AgentSite name.
	_, body = get(t, e, doc, "/v0.1/servers", "/v0.1/servers?search=plain", nil)
	if err := json.Unmarshal(body, &list); err != nil || len(list.Servers) != 1 || list.Servers[0].Server.Name != mcpregistry.ServerName(plain.Record) {
		t.Errorf("own listing: %s", body)
	}
}

// A listing without a description keeps it empty: the export fills the
// registry's required description with the marked placeholder the hub
// shows ("No description."), not the title (which reads as a made-up
// description), and a listing with
// one is not marked.
func TestEmptyDescriptionIsNotTheTitle(t *testing.T) {
	doc := spec(t)
	e := handlertest.New(t)
	in := handlertest.SimpleInput("quiet-bot", "Quiet Bot")
	in.Description = ""
	e.SeedAgent("", in)
	e.SeedAgent("", handlertest.SimpleInput("chatty-bot", "Chatty Bot"))

	for _, c := range []struct {
		search, desc string
		placeholder  bool
	}{{"quiet", mcpregistry.NoDescription, true}, {"chatty", "Agent Chatty Bot", false}} {
		_, body := get(t, e, doc, "/v0.1/servers", "/v0.1/servers?search="+c.search, nil)
		var list mcpregistry.ServerList
		if err := json.Unmarshal(body, &list); err != nil || len(list.Servers) != 1 {
			t.Fatalf("%s: %s (%v)", c.search, body, err)
		}
		s := list.Servers[0].Server
		meta, _ := s.Meta[mcpregistry.AgentMeta].(map[string]any)
		if s.Description != c.desc || meta["description_placeholder"] != c.placeholder {
			t.Errorf("%s: description %q (placeholder %v), want %q (%v); title %q",
				c.search, s.Description, meta["description_placeholder"], c.desc, c.placeholder, s.Title)
		}
	}
}
