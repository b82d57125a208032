package discovery_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/discovery"
	"github.com/agentsite/agentsite/handlers/handlertest"
)

// schema is the AI Catalog schema vendored from ards-project/ard-spec.
func schema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("../../testdata/ard-spec/spec/schemas/ai-catalog.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("ai-catalog.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("ai-catalog.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func body(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The AI Catalog lists each local agent's A2A card and MCP server card
// and the node's registry, validates against the spec's schema, carries a
// Trust Manifest signed by the node key, and is cacheable (ETag, 304).
func TestAICatalog(t *testing.T) {
	env := handlertest.New(t)
	w := env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot", "weather"))
	empty := handlertest.SimpleInput("quiet-bot", "Quiet Bot")
	empty.Description = ""
	env.SeedAgent("", empty)
	env.SeedRemote("far-bot", "Far Bot", "")

	resp := env.Do(http.MethodGet, discovery.CatalogPath, nil)
	handlertest.WantStatus(t, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); ct != discovery.MediaType {
		t.Errorf("Content-Type = %q", ct)
	}
	etag := resp.Header.Get("ETag")
	if etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") {
		t.Errorf("ETag %q, Cache-Control %q", etag, resp.Header.Get("Cache-Control"))
	}
	raw := body(t, resp)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema(t).Validate(inst); err != nil {
		t.Fatalf("the catalog does not validate against ai-catalog.schema.json: %v\n%s", err, raw)
	}
	var m discovery.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	types := map[string]int{}
	ids := map[string]bool{}
	for _, e := range m.Entries {
		types[e.Type]++
		if ids[e.Identifier] {
			t.Errorf("identifier %s twice (it must be unique in a catalog)", e.Identifier)
		}
		ids[e.Identifier] = true
		if e.Metadata["agentsite.name"] == "far-bot" {
			t.Errorf("another node's agent is in this node's catalog")
		}
		if e.Metadata["agentsite.name"] == "quiet-bot" && e.Description != "" {
			t.Errorf("an empty description became %q", e.Description)
		}
	}
	if types[ard.TypeA2A] != 2 || types[ard.TypeMCP] != 2 || types[ard.TypeRegistry] != 1 {
		t.Errorf("entry types = %v", types)
	}
	if !ids[ard.URN(w.Record)] {
		t.Errorf("no entry for %s", ard.URN(w.Record))
	}
	tm := m.Host.TrustManifest
	if tm == nil || !strings.HasPrefix(tm.Identity, "did:key:z6Mk") || m.Host.Identifier != tm.Identity {
		t.Fatalf("host = %+v", m.Host)
	}
	signer, err := discovery.VerifyManifest(*tm)
	if err != nil || signer != env.Node.PeerID() {
		t.Errorf("trust manifest signed by %q (%v), want the node %s", signer, err, env.Node.PeerID())
	}
	forged := *tm
	forged.Identity = "did:web:evil.example"
	if _, err := discovery.VerifyManifest(forged); err == nil {
		t.Error("a changed trust manifest verifies")
	}

	resp = env.Do(http.MethodGet, discovery.CatalogPath, nil, "If-None-Match", etag)
	handlertest.WantStatus(t, resp, http.StatusNotModified)
}

// Past PageAgents local agents, a catalog page ends with a nested catalog
// entry for the next.
func TestAICatalogPages(t *testing.T) {
	if testing.Short() {
		t.Skip("registers many agents")
	}
	env := handlertest.New(t)
	for i := range discovery.PageAgents + 1 {
		env.SeedAgent("", handlertest.SimpleInput("bot-"+strconv.Itoa(i), "Bot "+strconv.Itoa(i)))
	}
	resp := env.Do(http.MethodGet, discovery.CatalogPath, nil)
	var m discovery.Manifest
	_ = json.Unmarshal(body(t, resp), &m)
	last := m.Entries[len(m.Entries)-1]
	if last.Type != ard.TypeCatalog || !strings.Contains(last.URL, "?after=") || len(m.Entries) != 1+2*discovery.PageAgents+1 {
		t.Fatalf("%d entries, last %+v", len(m.Entries), last)
	}
	resp = env.Do(http.MethodGet, strings.TrimPrefix(last.URL, env.TS.URL), nil)
	handlertest.WantStatus(t, resp, http.StatusOK)
	_ = json.Unmarshal(body(t, resp), &m)
	if len(m.Entries) != 2 {
		t.Errorf("second page: %d entries, want 2", len(m.Entries))
	}
}

// MCP server cards: the node's /mcp at <mcp url>/server-card and the older
// well-known path, and each local agent's (its tool on /mcp).
func TestServerCards(t *testing.T) {
	env := handlertest.New(t)
	w := env.SeedAgent("", handlertest.SimpleInput("weather-bot", "Weather Bot", "weather"))
	far := env.SeedRemote("far-bot", "Far Bot", "")
	for _, path := range []string{"/mcp/server-card", discovery.LegacyServerCardPath} {
		resp := env.Do(http.MethodGet, path, nil)
		handlertest.WantStatus(t, resp, http.StatusOK)
		if ct := resp.Header.Get("Content-Type"); ct != discovery.ServerCardMediaType || resp.Header.Get("ETag") == "" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		c := handlertest.Decode[discovery.ServerCard](t, resp)
		if c.Transport.Endpoint != env.TS.URL+"/mcp" || len(c.Remotes) != 1 || c.ProtocolVersion == "" || len(c.Tools) < 4 {
			t.Errorf("%s: %+v", path, c)
		}
	}
	resp := env.Do(http.MethodGet, "/mcp/agents/"+w.Record.ID+"/server-card", nil)
	handlertest.WantStatus(t, resp, http.StatusOK)
	c := handlertest.Decode[discovery.ServerCard](t, resp)
	if c.Title != "Weather Bot" || c.Tools[0].Name != "agent_weather-bot" || c.Remotes[0].URL != env.TS.URL+"/mcp" {
		t.Errorf("agent card = %+v", c)
	}
	resp = env.Do(http.MethodGet, "/mcp/agents/"+far.Record.ID+"/server-card", nil)
	handlertest.WantStatus(t, resp, http.StatusNotFound)
	resp = env.Do(http.MethodGet, "/mcp/agents/nope/server-card", nil)
	handlertest.WantStatus(t, resp, http.StatusNotFound)
}

// The portal's pages point at the catalog (ARD §6.1's HTML link tag).
func TestPortalLinksTheCatalog(t *testing.T) {
	env := handlertest.New(t)
	for _, path := range []string{"/", "/agents", "/nodes"} {
		doc := env.Page(path, http.StatusOK)
		if href, _ := doc.Find(`head link[rel="ai-catalog"]`).Attr("href"); href != discovery.CatalogPath {
			t.Errorf("%s: link rel=ai-catalog href=%q", path, href)
		}
	}
}
