package mcpregistry_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
)

// An imported stdio server (packages only: a catalogue listing) is
// exported with its package and no remote, marked as hosted nowhere, with
// _meta saying where the listing came from; the answers fit the
// registry's API, and the server fits its server.json schema (the
// OpenAPI's ServerDetail, from which the registry generates
// server.schema.json). Before, it was a remote at this node's /mcp,
// marked online, its packages dropped.
func TestStdioServerKeepsItsPackages(t *testing.T) {
	doc := spec(t)
	e := handlertest.New(t)
	in := handlertest.SimpleInput("io-github-user-files", "Files")
	in.Version = "1.2.0"
	in.Backend = agent.Backend{Kind: agent.BackendCatalogue}
	in.Origin = &agent.Origin{Registry: agent.OriginMCPRegistry, Name: "io.github.user/files", Version: "1.2.0",
		Install: "npx -y @user/files-mcp@1.2.0"}
	e.SeedAgent("", in)

	_, body := get(t, e, doc, "/v0.1/servers", "/v0.1/servers?search=files", nil)
	var list mcpregistry.ServerList
	if err := json.Unmarshal(body, &list); err != nil || len(list.Servers) != 1 {
		t.Fatalf("list: %s (%v)", body, err)
	}
	check := func(s mcpregistry.ServerDetail) {
		t.Helper()
		if s.Name != "io.github.user/files" || len(s.Remotes) != 0 {
			t.Errorf("server %s has remotes %+v, want none", s.Name, s.Remotes)
		}
		want := mcpregistry.Package{RegistryType: "npm", Identifier: "@user/files-mcp", Version: "1.2.0", RuntimeHint: "npx",
			Transport: mcpregistry.Transport{Type: "stdio"}}
		if len(s.Packages) != 1 || s.Packages[0] != want {
			t.Errorf("packages = %+v, want %+v", s.Packages, want)
		}
		meta, _ := s.Meta[mcpregistry.AgentMeta].(map[string]any)
		from, _ := meta["listed_from"].(map[string]any)
		if meta["hosted"] != false || meta["status"] == "online" || meta["install"] != in.Origin.Install ||
			from["registry"] != agent.OriginMCPRegistry || from["name"] != "io.github.user/files" {
			t.Errorf("_meta = %v", meta)
		}
		raw, _ := json.Marshal(s)
		var v any
		_ = json.Unmarshal(raw, &v)
		if err := doc.Components.Schemas["ServerDetail"].Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("the server does not fit server.json: %v\n%s", err, raw)
		}
	}
	check(list.Servers[0].Server)

	path := "/v0.1/servers/" + url.PathEscape("io.github.user/files") + "/versions/latest"
	code, body := get(t, e, doc, "/v0.1/servers/{serverName}/versions/{version}", path,
		map[string]string{"serverName": "io.github.user/files", "version": "latest"})
	var one mcpregistry.ServerResponse
	if code != 200 || json.Unmarshal(body, &one) != nil {
		t.Fatalf("by name: %d %s", code, body)
	}
	check(one.Server)
}
