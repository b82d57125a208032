package mcpserver_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestMCPCatalogueResources: in both protocol eras, an agent reads as
// agentsite://agents/{id} (its card and listing), an unknown one is a
// resource-not-found error, completion offers agent ids and tags, and the
// chat prompt names the agent and the send_message tool.
func TestMCPCatalogueResources(t *testing.T) {
	env, echo := newMCPTestServer(t, nil)
	notFound := map[string]int64{"2025-11-25": -32002, "": jsonrpc.CodeInvalidParams}
	for _, era := range MCPEras {
		cs, _ := ConnectMCP(t, env.TS.URL+"/mcp", era)
		ctx := t.Context()
		uri := "agentsite://agents/" + echo.ID
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatalf("protocol %q: read %s: %v", era, uri, err)
		}
		var entry struct {
			Card    any `json:"card"`
			Listing struct {
				ID string `json:"id"`
			} `json:"listing"`
		}
		if len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &entry) != nil || entry.Listing.ID != echo.ID || entry.Card == nil {
			t.Errorf("protocol %q: read %s: %+v", era, uri, res.Contents)
		}
		_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "agentsite://agents/" + strings.Repeat("a", len(echo.ID))})
		var e *jsonrpc.Error
		if !errors.As(err, &e) || e.Code != notFound[era] {
			t.Errorf("protocol %q: read an unknown agent: %v, want code %d", era, err, notFound[era])
		}

		ids, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "agentsite://agents/{id}"},
			Argument: mcp.CompleteParamsArgument{Name: "id", Value: echo.ID[:4]},
		})
		if err != nil || !slices.Contains(ids.Completion.Values, echo.ID) || len(ids.Completion.Values) > 100 {
			t.Errorf("protocol %q: complete id %q: %+v, %v", era, echo.ID[:4], ids, err)
		}
		tags, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "agentsite://tags/{tag}"},
			Argument: mcp.CompleteParamsArgument{Name: "tag", Value: "mcp"},
		})
		if err != nil || !slices.Equal(tags.Completion.Values, []string{"mcp-test"}) {
			t.Errorf("protocol %q: complete tag mcp: %+v, %v", era, tags, err)
		}
		none, err := cs.Complete(ctx, &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: "agentsite://tags/{tag}"},
			Argument: mcp.CompleteParamsArgument{Name: "tag", Value: "zzz"},
		})
		if err != nil || len(none.Completion.Values) != 0 {
			t.Errorf("protocol %q: complete tag zzz: %+v, %v", era, none, err)
		}

		p, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "chat_with_echo-bot"})
		if err != nil || len(p.Messages) != 1 {
			t.Fatalf("protocol %q: get chat_with_echo-bot: %+v, %v", era, p, err)
		}
		text := p.Messages[0].Content.(*mcp.TextContent).Text
		if !strings.Contains(text, "send_message") || !strings.Contains(text, echo.ID) || strings.Contains(text, "IGNORE") {
			t.Errorf("protocol %q: prompt %q", era, text)
		}
		if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "chat_with_agent", Arguments: map[string]string{"agent_id": strings.Repeat("a", len(echo.ID))}}); err == nil {
			t.Errorf("protocol %q: a chat prompt for an unknown agent", era)
		}
	}
}

// TestMCPSubscribeRefusals: only an agent that exists can be watched; a
// refusal says why.
func TestMCPSubscribeRefusals(t *testing.T) {
	env, echo := newMCPTestServer(t, nil)
	cs, _ := ConnectMCP(t, env.TS.URL+"/mcp", "2025-11-25")
	ctx := t.Context()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "agentsite://agents/" + echo.ID}); err != nil {
		t.Errorf("subscribe to an agent: %v", err)
	}
	for uri, want := range map[string]string{
		"nothing://here": "Only an agent's resource",
		"agentsite://agents/" + strings.Repeat("a", len(echo.ID)): "No agent",
	} {
		err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("subscribe to %s: %v, want an error saying %q", uri, err, want)
		}
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "agentsite://agents/" + echo.ID}); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
}
