package mcpserver

// AgentToolName is the name of the tool on /mcp that talks to the local
// agent name (the MCP server cards of handlers/discovery list it).
func AgentToolName(name string) string { return agentToolName(name) }
