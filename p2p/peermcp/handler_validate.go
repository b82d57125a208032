package peermcp

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// validate applies the contract's limits (those of a local turn); nil if
// in is fine.
func validate(in *turnArgs) *mcp.CallToolResult {
	in.Text = strings.TrimSpace(in.Text)
	switch {
	case !agent.ValidID(in.AgentID):
		return toolError(agent.ErrUnknownAgent.With("No agent has this id."), "")
	case in.Text == "":
		return badArgs("text", "is required")
	case len(in.Text) > MaxTextBytes:
		return badArgs("text", fmt.Sprintf("is limited to %d KiB", MaxTextBytes>>10))
	case !utf8.ValidString(in.Text):
		return badArgs("text", "is not valid UTF-8")
	case len(in.History) > MaxHistory:
		return badArgs("history", fmt.Sprintf("is limited to %d messages", MaxHistory))
	}
	for _, m := range in.History {
		if m.Role != agent.RoleUser && m.Role != agent.RoleAgent {
			return badArgs("history", "roles must be user or agent")
		}
		if len(m.Text) > MaxHistoryEntryBytes || !utf8.ValidString(m.Text) {
			return badArgs("history", "holds a message that is too long or not UTF-8")
		}
	}
	return nil
}

// badArgs is the tool error for arguments that break the contract.
func badArgs(field, problem string) *mcp.CallToolResult {
	return toolError(agent.NewError(agent.KindInvalid, CodeBadArguments, "Argument "+field+" "+problem+"."), "")
}

// fromWire is the history as the runtime takes it.
func fromWire(h []historyItem) []agent.ChatMessage {
	out := make([]agent.ChatMessage, len(h))
	for i, m := range h {
		out[i] = agent.ChatMessage{Role: m.Role, Text: m.Text}
	}
	return out
}
