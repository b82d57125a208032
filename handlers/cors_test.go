package handlers_test

import (
	"net/http"
	"testing"

	"github.com/agentsite/agentsite/handlers/discovery"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

const elsewhere = "https://elsewhere.example"

// The discovery documents (agent cards, the MCP server cards, the AI
// Catalog, the ARD registry's GET) may be read by any page: GET answers
// Access-Control-Allow-Origin: * without credentials, and a preflight is
// answered for GET. The portal, the API and every state-changing
// endpoint stay same-origin: no CORS header, preflight or not.
func TestCORSOnDiscoveryOnly(t *testing.T) {
	e := New(t)
	id := e.SeedEcho("cors-bot", "CORS Bot")
	public := []string{
		"/.well-known/agent-card.json",
		"/a2a/.well-known/agent-card.json",
		"/a2a/" + id + "/.well-known/agent-card.json",
		"/a2a/" + id + "/agent-card.json",
		discovery.CatalogPath,
		"/mcp/server-card",
		discovery.LegacyServerCardPath,
		"/mcp/agents/" + id + "/server-card",
		"/ard/agents",
	}
	for _, path := range public {
		resp := e.Do(http.MethodGet, path, nil, "Origin", elsewhere)
		WantStatus(t, resp, http.StatusOK)
		if resp.Header.Get("Access-Control-Allow-Origin") != "*" || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("GET %s: CORS headers %v", path, resp.Header)
		}
		pre := e.Do(http.MethodOptions, path, nil, "Origin", elsewhere, "Access-Control-Request-Method", "GET",
			"Access-Control-Request-Headers", "if-none-match")
		if pre.StatusCode >= 300 || pre.Header.Get("Access-Control-Allow-Origin") != "*" ||
			pre.Header.Get("Access-Control-Allow-Methods") == "" || pre.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("OPTIONS %s: %d %v", path, pre.StatusCode, pre.Header)
		}
	}

	private := []struct{ method, path string }{
		{http.MethodPost, "/api/v1/agents"},
		{http.MethodOptions, "/api/v1/agents"},
		{http.MethodGet, "/api/v1/agents"},
		{http.MethodPost, "/a2a/" + id},
		{http.MethodOptions, "/a2a/" + id},
		{http.MethodPost, "/a2a/" + id + "/message:send"},
		{http.MethodPost, "/ard/search"},
		{http.MethodOptions, "/ard/search"},
		{http.MethodPost, "/mcp"},
		{http.MethodGet, "/"},
		{http.MethodPost, "/login"},
	}
	for _, c := range private {
		resp := e.Do(c.method, c.path, `{}`, "Origin", elsewhere, "Access-Control-Request-Method", "POST")
		if v := resp.Header.Get("Access-Control-Allow-Origin"); v != "" {
			t.Errorf("%s %s: Access-Control-Allow-Origin %q, want none", c.method, c.path, v)
		}
	}
}
