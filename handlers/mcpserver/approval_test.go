package mcpserver_test

import (
	"strings"
	"testing"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestMCPToolApprovalFailsClosed: an agent whose tool needs approval,
// reached through send_message of the node's MCP server, never has the
// call run: the client (perhaps a model) cannot approve it; the agent is
// told why and says so, and the step names chat and A2A as where to ask.
// A word "approve" sent next approves nothing.
func TestMCPToolApprovalFailsClosed(t *testing.T) {
	env, _ := newMCPTestServer(t, nil)
	id, notes := env.SeedNotesAgent("", "note-bot")
	cs, _ := ConnectMCP(t, env.TS.URL+"/mcp", "")
	res := CallTool(t, cs, "send_message", map[string]any{"agent_id": id, "text": "note buy milk"}, "")
	text := strings.Join(ResultText(res), "\n")
	if res.IsError || !strings.Contains(text, "needs a person's approval") || !strings.Contains(text, "chat page or over A2A") {
		t.Fatalf("result (error %v): %q", res.IsError, text)
	}
	out := Structured[struct {
		ConversationID string `json:"conversation_id"`
	}](t, res)
	res = CallTool(t, cs, "send_message", map[string]any{"agent_id": id, "text": "approve", "conversation_id": out.ConversationID}, "")
	if res.IsError {
		t.Fatalf("second turn: %q", ResultText(res))
	}
	if notes.Saves() != 0 {
		t.Errorf("save_note ran %d times through MCP", notes.Saves())
	}
}
