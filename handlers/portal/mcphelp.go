package portal

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/web"
)

// mcpClientConfig is an MCP client configuration for endpoint (a node's
// /mcp): the "mcpServers" file Claude Code (.mcp.json) and Cursor
// (mcp.json) read, with the transport named ("type": "http",
// Streamable HTTP), which Claude Code requires for a remote server.
func mcpClientConfig(endpoint string) string {
	cfg, _ := json.MarshalIndent(map[string]any{
		"mcpServers": map[string]any{web.MCPServerName: map[string]string{"type": "http", "url": endpoint}},
	}, "", "  ")
	return string(cfg)
}

// cursorInstall is Cursor's install link for the server at endpoint: its
// mcp.json entry, base64 JSON, under the server's name.
func cursorInstall(endpoint string) string {
	cfg, _ := json.Marshal(map[string]string{"url": endpoint})
	return "cursor://anysphere.cursor-deeplink/mcp/install?name=" + url.QueryEscape(web.MCPServerName) + "&config=" + base64.StdEncoding.EncodeToString(cfg)
}

// vscodeInstall is VS Code's install link for the server at endpoint:
// the server, named, as percent-encoded JSON.
func vscodeInstall(endpoint string) string {
	cfg, _ := json.Marshal(map[string]string{"name": web.MCPServerName, "type": "http", "url": endpoint})
	return "vscode:mcp/install?" + url.PathEscape(string(cfg))
}

// claudeCodeAdd is the Claude Code command that adds the server.
func claudeCodeAdd(endpoint string) string {
	return "claude mcp add --transport http " + web.MCPServerName + " " + endpoint
}

// vscodeConfig is the same server in VS Code's .vscode/mcp.json, which
// names its list "servers".
func vscodeConfig(endpoint string) string {
	cfg, _ := json.MarshalIndent(map[string]any{
		"servers": map[string]any{web.MCPServerName: map[string]string{"type": "http", "url": endpoint}},
	}, "", "  ")
	return string(cfg)
}

// mcpToolCall is how an MCP client talks to agent id through this node:
// the tool send_message (every agent on the planet, local or not) and its
// arguments.
func mcpToolCall(id string) string {
	args, _ := json.Marshal(map[string]string{"agent_id": id, "text": "Hello"})
	return "send_message " + string(args)
}

// PageMCPHelp is what a browser gets at /mcp (GET asking for HTML): how to
// connect an MCP client, instead of the protocol's bare refusal. base is
// the node's public origin (--public-url, else the request's). With
// ?agent=<id> (an agent this node knows) it also says how to reach that
// agent.
func (p *Pages) PageMCPHelp(w http.ResponseWriter, r *http.Request, base string) {
	endpoint := base + "/mcp"
	v := web.MCPHelpView{
		Page:     p.page(r, p.viewer(r), "Connect an MCP client", ""),
		Endpoint: endpoint,
		Config:   mcpClientConfig(endpoint),
		VSCode:   vscodeConfig(endpoint),
	}
	if id := r.URL.Query().Get("agent"); agent.ValidID(id) {
		if l, err := p.Catalog.GetAgent(r.Context(), id); err == nil {
			v.AgentID, v.AgentName, v.ToolCall = id, l.Record.DisplayName, mcpToolCall(id)
		}
	}
	p.render(w, r, http.StatusOK, web.MCPHelpPage(v))
}
