package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

const descPeerSendMessage = "Answer one turn of a conversation with an agent hosted on this node. " +
	"The caller keeps the conversation and sends its earlier messages as history; the reply streams as progress notifications."

var schemaPeerSendMessage = json.RawMessage(`{"type":"object","properties":{
	"agent_id":{"type":"string"},
	"text":{"type":"string","maxLength":8192},
	"conversation_id":{"type":"string"},
	"owner":{"type":"string"},
	"history":{"type":"array","maxItems":100,"items":{"type":"object","properties":{
		"role":{"type":"string","enum":["user","agent"]},"text":{"type":"string"}},"required":["role","text"]}}},
	"required":["agent_id","text"]}`)

// mcpPeer is the MCP server other nodes reach over libp2p.
type mcpPeer struct {
	s      *Server
	srv    *server.MCPServer
	limits *httpkit.Rates // per calling peer: a portal forwards many people's turns
}

func (p *mcpPeer) addTools() {
	p.srv.AddTool(rawTool("send_message", descPeerSendMessage, schemaPeerSendMessage), p.sendMessage)
}

// peerTurnIn is send_message's arguments from a peer.
type peerTurnIn struct {
	AgentID        string              `json:"agent_id"`
	Text           string              `json:"text"`
	ConversationID string              `json:"conversation_id"`
	History        []agent.ChatMessage `json:"history"`
	// Owner is the agent owner the caller's conversation is bound to; nil
	// from a node that predates it.
	Owner *string `json:"owner"`
}

// sendMessage answers statelessly with the local runtime: nothing is
// stored here, the calling node stores the conversation.
func (p *mcpPeer) sendMessage(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in peerTurnIn
	if err := req.BindArguments(&in); err != nil {
		return badArgs("arguments", "do not match the tool's schema"), nil
	}
	if res := validatePeerTurn(&in); res != nil {
		return res, nil
	}
	if !p.limits.Allow(callerFrom(ctx), p.s.now()) {
		return peerError(&httpkit.Error{Status: http.StatusTooManyRequests, Code: "rate_limited", Message: "This node is answering too many messages from yours; try again in a minute."}, ""), nil
	}
	l, err := p.s.Store.GetAgent(ctx, in.AgentID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && (!l.Local || l.Record.Tombstone)):
		return peerError(&httpkit.Error{Status: http.StatusNotFound, Code: "unknown_agent", Message: "This agent is not hosted here any more."}, ""), nil
	case err != nil:
		p.s.Logger.ErrorContext(ctx, "peer MCP: reading an agent failed", "agent", in.AgentID, "err", err)
		return peerError(httpkit.Errorf(http.StatusInternalServerError, "internal", "The agent's node failed; try again later."), ""), nil
	case in.Owner != nil && *in.Owner != l.Record.Owner:
		return peerError(httpkit.Classify(agent.ErrOwnerChanged), ""), nil
	case p.s.Chat.Local == nil:
		return peerError(httpkit.Errorf(http.StatusBadGateway, "agent_unavailable", "The agent could not answer right now. Try again later."), ""), nil
	}
	turn := agent.Turn{AgentID: in.AgentID, ConversationID: in.ConversationID, History: in.History, Text: in.Text}
	stream := newTurnStream(ctx, p.srv, progressToken(req))
	reply, err := p.s.Chat.Local.Answer(ctx, turn, stream.emit)
	stream.drain()
	if err != nil {
		return peerError(httpkit.Classify(chat.TurnError(err, l)), runtime.PublicMessage(err)), nil
	}
	return mcp.NewToolResultText(reply), nil
}

// validatePeerTurn applies the limits a local turn has; nil if in is fine.
func validatePeerTurn(in *peerTurnIn) *mcp.CallToolResult {
	in.Text = strings.TrimSpace(in.Text)
	switch {
	case !agent.ValidID(in.AgentID):
		return peerError(&httpkit.Error{Status: http.StatusNotFound, Code: "unknown_agent", Message: "No agent has this id."}, "")
	case in.Text == "":
		return badArgs("text", "is required")
	case len(in.Text) > chat.MaxMessageBytes:
		return badArgs("text", fmt.Sprintf("is limited to %d KiB", chat.MaxMessageBytes>>10))
	case !utf8.ValidString(in.Text):
		return badArgs("text", "is not valid UTF-8")
	case len(in.History) > maxMCPHistory:
		return badArgs("history", fmt.Sprintf("is limited to %d messages", maxMCPHistory))
	}
	for _, m := range in.History {
		if m.Role != agent.RoleUser && m.Role != agent.RoleAgent {
			return badArgs("history", "roles must be user or agent")
		}
		if len(m.Text) > maxMCPReplyBytes || !utf8.ValidString(m.Text) {
			return badArgs("history", "holds a message that is too long or not UTF-8")
		}
	}
	return nil
}

// peerError is a tool error for the calling node: code and message as
// handlers' turnError made them, and the backend's public detail, so the
// portal can show the same words it would for a local agent.
func peerError(e *httpkit.Error, detail string) *mcp.CallToolResult {
	ej := map[string]any{"code": e.Code, "message": e.Message}
	if detail != "" {
		ej["detail"] = detail
	}
	res := mcp.NewToolResultStructured(map[string]any{"error": ej}, e.Message)
	res.IsError = true
	return res
}
