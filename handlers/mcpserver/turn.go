package mcpserver

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/mcpkit/mcpstream"
)

// NoApprovalsHere is why a tool call that needs approval is refused in a
// turn from an MCP client that did not declare elicitation: its caller
// may be a model, which must not approve on a person's behalf (docs/
// agents.md, "Tools and approvals"). One that did is asked (elicits).
const NoApprovalsHere = "an MCP client cannot approve it, so ask this agent in its chat page or over A2A, where the person approves each call"

func (p *public) sendMessage(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	id, ok := argString(req.GetArguments(), "agent_id")
	if !ok || id == "" {
		return nil, badArgs("agent_id", "is required: an agent id from search_agents")
	}
	return p.turn(ctx, req, id)
}

// turn runs one chat turn for an MCP client, exactly as the web chat does
// (stored, routed to the hosting node), streaming the reply as
// notifications. The conversation belongs to the MCP session; clients of
// the sessionless protocol (2026-07-28) share one owner, and their
// conversation ids are the capability to continue, as for the anonymous
// message API.
func (p *public) turn(ctx context.Context, req mcp.CallToolRequest, agentID string) (*mcp.CallToolResult, error) {
	args := req.GetArguments()
	text, ok := argString(args, "text")
	if !ok {
		return nil, badArgs("text", "must be a string")
	}
	conv, ok := argString(args, "conversation_id")
	if !ok {
		return nil, badArgs("conversation_id", "must be a string")
	}
	if !p.s.ChatRates.Allow(callerFrom(ctx), p.s.Now().UTC()) {
		return nil, errRateLimited
	}
	owner := chat.MCPAnonymous
	if cs := server.ClientSessionFromContext(ctx); cs != nil && cs.SessionID() != "" {
		owner = chat.MCPOwner(cs.SessionID())
	}
	if owner == chat.MCPAnonymous {
		// Clients without a session share an owner; each waits in a
		// model's queue as its own client.
		ctx = agent.WithCaller(ctx, string(owner)+"@"+callerFrom(ctx))
	}
	stream := mcpstream.New(ctx, p.srv, req)
	noApprovals := NoApprovalsHere
	if elicits(ctx) {
		noApprovals = "" // the client's person is asked (elicitation)
	}
	res, err := p.s.Chat.Turn(ctx, owner, chat.Request{AgentID: agentID, ConversationID: conv, Text: text,
		Quota: p.s.ChatRates.Quota(p.s.Now, callerFrom(ctx)), NoApprovals: noApprovals}, stream.Emit)
	for n := 0; err == nil && res.Approval != nil && n < maxElicitations; n++ {
		answer := p.elicitApproval(ctx, res.Reply.Text, *res.Approval)
		word := "Deny"
		if answer.Approve {
			word = "Approve"
		}
		res, err = p.s.Chat.Turn(ctx, owner, chat.Request{AgentID: agentID, ConversationID: res.Conversation.ID, Text: word,
			Quota: p.s.ChatRates.Quota(p.s.Now, callerFrom(ctx)), Approval: &answer}, stream.Emit)
	}
	stream.Drain()
	if err != nil {
		return nil, &turnFailed{err: err, conversationID: res.Conversation.ID}
	}
	cid := res.Conversation.ID
	return &mcp.CallToolResult{
		Content: []mcp.Content{
			mcp.NewTextContent(res.Reply.Text),
			mcp.NewTextContent("conversation_id: " + cid),
		},
		StructuredContent: map[string]any{
			"agent_id": agentID, "conversation_id": cid, "message_id": res.Reply.ID, "reply": res.Reply.Text,
		},
	}, nil
}

// maxElicitations bounds the approvals one send_message asks for.
const maxElicitations = 8

// elicits reports whether the calling client declared MCP elicitation:
// its person can then be asked to approve a tool call (docs/protocols.md).
func elicits(ctx context.Context) bool {
	cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	_, elicitable := cs.(server.SessionWithElicitation)
	return elicitable && cs.GetClientCapabilities().Elicitation != nil
}

// elicitApproval asks the client's person to approve a tool call: yes
// only when they accept with approve true; anything else (decline,
// cancel, an error) is no.
func (p *public) elicitApproval(ctx context.Context, prompt string, a agent.Approval) agent.ApprovalAnswer {
	var req mcp.ElicitationRequest
	req.Params.Message = prompt
	req.Params.RequestedSchema = map[string]any{
		"type": "object",
		"properties": map[string]any{
			"approve": map[string]any{"type": "boolean", "title": "Approve " + a.Tool + " on " + a.Server,
				"description": "Arguments: " + a.Args},
		},
		"required": []string{"approve"},
	}
	answer := agent.ApprovalAnswer{ID: a.ID}
	res, err := p.srv.RequestElicitation(ctx, req)
	if err != nil || res == nil || res.Action != mcp.ElicitationResponseActionAccept {
		return answer
	}
	if m, ok := res.Content.(map[string]any); ok {
		answer.Approve, _ = m["approve"].(bool)
	}
	return answer
}
