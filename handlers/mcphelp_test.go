package handlers_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestMCPInABrowser: /mcp opened in a browser is a page saying how to
// connect a client; MCP clients still get the protocol.
func TestMCPInABrowser(t *testing.T) {
	e := New(t)
	doc := e.Page("/mcp", http.StatusOK, "Accept", "text/html,application/xhtml+xml")
	endpoint := Text(MustTestid(t, doc, "mcp-endpoint"))
	if endpoint != e.TS.URL+"/mcp" {
		t.Errorf("endpoint %q, want %q", endpoint, e.TS.URL+"/mcp")
	}
	var cfg struct {
		MCPServers map[string]struct{ URL string } `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(Text(MustTestid(t, doc, "mcp-config"))), &cfg); err != nil || cfg.MCPServers["agentsite"].URL != endpoint {
		t.Errorf("config %+v (%v)", cfg, err)
	}
	// An MCP client's GET is not a page.
	resp := e.Do(http.MethodGet, "/mcp", nil, "Accept", "text/event-stream")
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("an MCP client's GET got a page (%d)", resp.StatusCode)
	}
}
