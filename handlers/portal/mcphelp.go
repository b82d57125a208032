package portal

import (
	"encoding/json"
	"net/http"

	"github.com/agentsite/agentsite/web"
)

// PageMCPHelp is what a browser gets at /mcp (GET asking for HTML): how to
// connect an MCP client, instead of the protocol's bare refusal. base is
// the node's public origin (--public-url, else the request's).
func (p *Pages) PageMCPHelp(w http.ResponseWriter, r *http.Request, base string) {
	endpoint := base + "/mcp"
	cfg, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]any{"agentsite": map[string]string{"type": "http", "url": endpoint}},
	}, "", "  ")
	p.render(w, r, http.StatusOK, web.MCPHelpPage(web.MCPHelpView{
		Page:     p.page(r, p.viewer(r), "Connect an MCP client", ""),
		Endpoint: endpoint,
		Config:   string(cfg),
	}))
}
