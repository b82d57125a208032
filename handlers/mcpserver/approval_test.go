package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestMCPToolApprovalFailsClosed: an agent whose tool needs approval,
// reached through send_message of the node's MCP server by a client
// without elicitation, never has the call run: the client (perhaps a
// model) cannot approve it; the agent is
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

// TestMCPToolApprovalElicits: a client that declared elicitation (a
// session of the 2025-11-25 protocol) is asked, within the same
// send_message, to approve the call, showing the tool and arguments;
// accepting with approve runs it and the reply goes on; declining runs
// nothing.
func TestMCPToolApprovalElicits(t *testing.T) {
	env, _ := newMCPTestServer(t, nil)
	id, notes := env.SeedNotesAgent("", "note-bot")
	var mu sync.Mutex
	var asked []string
	approve := true
	c := sdk.NewClient(&sdk.Implementation{Name: "eliciting-client", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params.Message)
			if !approve {
				return &sdk.ElicitResult{Action: "decline"}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}})
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: env.TS.URL + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })

	res := CallTool(t, cs, "send_message", map[string]any{"agent_id": id, "text": "note buy milk"}, "")
	if text := strings.Join(ResultText(res), "\n"); res.IsError || !strings.Contains(text, "done: saved: buy milk") || notes.Saves() != 1 {
		t.Fatalf("approved: %q, saves %d", text, notes.Saves())
	}
	mu.Lock()
	if len(asked) != 1 || !strings.Contains(asked[0], "save_note") || !strings.Contains(asked[0], "buy milk") {
		t.Errorf("elicitations %q", asked)
	}
	approve = false
	mu.Unlock()
	res = CallTool(t, cs, "send_message", map[string]any{"agent_id": id, "text": "note sell cow"}, "")
	if text := strings.Join(ResultText(res), "\n"); res.IsError || !strings.Contains(text, "denied") || notes.Saves() != 1 {
		t.Errorf("declined: %q, saves %d", text, notes.Saves())
	}
}
