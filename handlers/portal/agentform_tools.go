package portal

import (
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// parseTools reads the tools field of the agent form: one server a line,
// an MCP server's URL optionally followed by "Header: secret", or an
// agent id; a last word "allow=tool_a,tool_b" (or "allow=*") names the
// tools the agent may call without asking (agent.ToolServer.Allow).
// Blank lines are skipped; a header with no secret after it
// keeps the stored one (registry.KeepKey). typedSecret reports a secret
// was typed (the form never renders one back).
func parseTools(text string) (tools []agent.ToolServer, typedSecret bool) {
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var allow []string
		if i := strings.LastIndexAny(line, " \t"); i >= 0 && strings.HasPrefix(line[i+1:], allowPrefix) {
			allow = strings.Split(strings.TrimPrefix(line[i+1:], allowPrefix), ",")
			line = strings.TrimSpace(line[:i])
		}
		first, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		if !strings.Contains(first, "://") {
			tools = append(tools, agent.ToolServer{Agent: first, Secret: rest, Allow: allow})
			typedSecret = typedSecret || rest != ""
			continue
		}
		t := agent.ToolServer{URL: first, Allow: allow}
		if rest != "" {
			if name, value, ok := strings.Cut(rest, ":"); ok && !strings.ContainsAny(strings.TrimSpace(name), " \t") {
				t.Header, t.Secret = strings.TrimSpace(name), strings.TrimSpace(value)
			} else {
				t.Secret = rest // a bare token: sent as Authorization: Bearer
			}
		}
		typedSecret = typedSecret || t.Secret != ""
		tools = append(tools, t)
	}
	return tools, typedSecret
}

// toolsText is the tools field for tools, secrets left out: a server with
// a secret shows its header with nothing after it, which keeps the secret.
func toolsText(tools []agent.ToolServer) string {
	lines := make([]string, 0, len(tools))
	for _, t := range tools {
		line := t.URL
		switch {
		case t.Agent != "":
			line = t.Agent
		case t.Secret != "" || t.Header != "":
			line = t.URL + " " + t.HeaderName() + ":"
		}
		if len(t.Allow) > 0 {
			line += " " + allowPrefix + strings.Join(t.Allow, ",")
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// allowPrefix starts a tools line's last word naming the tools allowed
// without asking.
const allowPrefix = "allow="
