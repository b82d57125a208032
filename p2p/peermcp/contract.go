// Package peermcp is node-to-node MCP over libp2p. It owns the contract
// (the send_message tool, its arguments, its limits and the error codes a
// host answers with), the handler a node serves to the others, and the
// client a node sends its people's turns to other nodes' agents with.
//
// A turn to a remote agent goes: Client.Send → p2p.Node (the host's lines
// stream, client_lines.go; HTTP over libp2p streams to older hosts) → the
// host's NewLinesHandler (or NewHandler) → its Answerer (the runtime), with
// the reply streamed back as progress notifications. The calling
// node keeps the conversation; the host stores nothing. A host's error
// code maps back to the agent.Error a local turn would have had.
package peermcp

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// ToolName is the one tool a node serves to the others.
const ToolName = "send_message"

// Limits of one send_message call: a host refuses more, a caller trims
// the history to fit.
const (
	// MaxBodyBytes bounds a call's HTTP body: the text, the history and
	// the JSON around them.
	MaxBodyBytes = 1 << 20
	// MaxTextBytes bounds the message, as a local chat turn does.
	MaxTextBytes = agent.MaxMessageBytes
	// MaxHistory is how many earlier messages may come with a turn.
	MaxHistory = 100
	// MaxHistoryEntryBytes bounds one of them (agent replies are at most
	// 64 KiB by default).
	MaxHistoryEntryBytes = 256 << 10
	// maxHistoryBytes is what a caller sends of the history: under
	// MaxBodyBytes with room for the JSON around it.
	maxHistoryBytes = 768 << 10
)

// Timings of the client.
const (
	connectTimeout = 5 * time.Second // initialize on a new host (p2p bounds the dial itself)
	// turnTimeout is above the runtime's own 60 s limit, so a slow
	// backend's timeout error from the host arrives before ours.
	turnTimeout = 70 * time.Second
	clientIdle  = 5 * time.Minute // an unused host's client is closed after this
)

// MethodStep is the notification a host sends, with the call's progress
// token and {"step": agent.Step}, for each delegation the agent makes while
// it answers, so the asking portal shows and keeps them as if the agent
// were its own.
const MethodStep = "notifications/agentsite/step"

// MethodWaiting is the notification a host sends, with the call's progress
// token and {"ahead": n}, while the turn waits for its model on the host
// (the model scheduler): how many requests go first, and -1 once the model
// takes it. A caller that does not know it ignores it.
const MethodWaiting = "notifications/agentsite/waiting"

// CodeBadArguments: the call's arguments break the contract. The host's
// other codes are the agent package's too (agent.TurnError maps them back).
const CodeBadArguments = agent.CodeBadArguments

// turnArgs are send_message's arguments.
type turnArgs struct {
	AgentID        string        `json:"agent_id"`
	Text           string        `json:"text"`
	ConversationID string        `json:"conversation_id"`
	History        []historyItem `json:"history"`
	// Owner is the agent owner the caller's conversation is bound to
	// (agent.Turn.Owner); nil from a node that predates it.
	Owner *string `json:"owner"`
	// HistoryOmitted: History is left out because the host said the
	// agent does not read it (history.go); a host whose agent reads it
	// refuses with agent.CodeHistoryRequired. Hosts that predate it
	// never say so, so they are never sent it.
	HistoryOmitted bool `json:"history_omitted,omitempty"`
}

// historyItem is one earlier message (agent.ChatMessage on the wire).
type historyItem struct {
	Role string `json:"role"` // agent.RoleUser or agent.RoleAgent
	Text string `json:"text"`
}

// wireError is a host's tool error, the structured content
// {"error": wireError} of a result with isError set.
type wireError struct {
	Code    agent.Code `json:"code"`
	Message string     `json:"message"`          // for people, in the host's words
	Detail  string     `json:"detail,omitempty"` // the backend's public summary
}

// toolSchema is send_message's input schema, from the limits above.
var toolSchema = json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
	"agent_id":{"type":"string"},
	"text":{"type":"string","maxLength":%d},
	"conversation_id":{"type":"string"},
	"owner":{"type":"string"},
	"history_omitted":{"type":"boolean"},
	"history":{"type":"array","maxItems":%d,"items":{"type":"object","properties":{
		"role":{"type":"string","enum":["user","agent"]},"text":{"type":"string"}},"required":["role","text"]}}},
	"required":["agent_id","text"]}`, MaxTextBytes, MaxHistory))

const toolDescription = "Answer one turn of a conversation with an agent hosted on this node. " +
	"The caller keeps the conversation and sends its earlier messages as history; the reply streams as progress notifications."
