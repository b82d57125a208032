package agent

import (
	"errors"
	"maps"
)

// Kind is the class of a failure. Each surface maps a Kind to its wire
// form once: an HTTP status, a JSON-RPC error code, a WebSocket frame.
type Kind uint8

// Kinds of failure.
const (
	KindInternal     Kind = iota // a bug or an unexpected failure; details only in logs
	KindInvalid                  // the input is wrong; Fields says where
	KindNotFound                 // no such thing (or not yours: the two look alike)
	KindGone                     // it existed and was deleted
	KindConflict                 // it clashes with something that exists
	KindUnauthorized             // who is asking is not known
	KindForbidden                // who is asking may not do this
	KindTooLarge                 // the input is over a size limit
	KindRateLimited              // too many requests; try again later
	KindUnavailable              // a dependency is down or busy; try again later
	KindTimeout                  // the agent took too long
	KindUpstream                 // the agent's backend or host failed
	KindCanceled                 // the caller went away
)

// Code is a stable, machine-readable error code: part of the API, the MCP
// tool errors and the node-to-node contract. Codes are defined here once.
type Code string

// Error codes of the domain (use cases). Transport-only codes (a bad JSON
// body, a bad WebSocket frame) are defined by their transport.
const (
	CodeInternal           Code = "internal"
	CodeInvalidInput       Code = "invalid_input"
	CodeNotFound           Code = "not_found"
	CodeConflict           Code = "conflict"
	CodeStale              Code = "stale"
	CodeUnauthorized       Code = "unauthorized"
	CodeForbidden          Code = "forbidden"
	CodeBadLogin           Code = "bad_login"
	CodeRateLimited        Code = "rate_limited"
	CodeCanceled           Code = "canceled"
	CodeStoreUnavailable   Code = "store_unavailable"
	CodeNetworkUnavailable Code = "network_unavailable"
	CodeUnknownAgent       Code = "unknown_agent"
	CodeAgentDeleted       Code = "deleted"
	CodeAgentOffline       Code = "agent_offline"
	CodeUnknownConv        Code = "unknown_conversation"
	CodeOwnerChanged       Code = "agent_changed_owner"
	CodeEmptyMessage       Code = "empty_message"
	CodeMessageTooLarge    Code = "message_too_large"
	CodeBadMessage         Code = "bad_message"
	CodeChatUnavailable    Code = "chat_unavailable"
	CodeAgentTimeout       Code = "agent_timeout"
	CodeAgentRejected      Code = "agent_rejected"
	CodeAgentMisconfigured Code = "agent_misconfigured"
	CodeAgentUnavailable   Code = "agent_unavailable"
	CodeAgentBadReply      Code = "agent_bad_reply"
	// CodeAgentReplyTooLarge: the reply was over the runtime's size limit.
	// Hosts before it sent CodeAgentBadReply for this too.
	CodeAgentReplyTooLarge Code = "agent_reply_too_large"
	CodeAgentBusy          Code = "agent_busy"
	// CodeModelBusy: the agent's model has a full queue on its host.
	CodeModelBusy       Code = "model_busy"
	CodeHostUnreachable Code = "host_unreachable"
	// CodeBadArguments: a tool call's arguments break its contract (MCP,
	// node to node and public).
	CodeBadArguments Code = "bad_arguments"
	// CodeMethodNotAllowed: the route takes other HTTP methods.
	CodeMethodNotAllowed Code = "method_not_allowed"
	CodeDelegationLoop   Code = "delegation_loop"
	CodeDelegationDepth  Code = "delegation_depth"
	CodeDelegationBudget Code = "delegation_budget"
	// CodeStopped: the person stopped the reply (AgentChat's Stop).
	CodeStopped Code = "stopped"
	// CodeReplyPending: a reply is still on its way in the conversation.
	CodeReplyPending Code = "reply_pending"
	// CodeNothingToRetry: the conversation has no message to send again.
	CodeNothingToRetry Code = "nothing_to_retry"
	// CodeUnknownApproval: an answer to a tool approval that is not
	// waiting (expired, answered, or another conversation's).
	CodeUnknownApproval Code = "unknown_approval"
	// CodeHistoryRequired: a turn came without its history (the caller
	// was told the agent does not read it) to a backend that reads it;
	// the caller sends it again with the history (node to node only).
	CodeHistoryRequired Code = "history_required"
)

// Error is a domain error: a kind, a stable code, and a message that is
// safe to show a person and says what to do next. Internal detail goes in
// Err (logs only). Two Errors with the same Code match with errors.Is, so
// a copy with another message (With) is still the same error.
type Error struct {
	Kind    Kind
	Code    Code
	Message string
	Fields  map[string]string // per-field problems, for KindInvalid
	Err     error             // the cause; never shown
	text    string            // what logs call this error, if not Message
}

func (e *Error) Error() string {
	s := e.text
	if s == "" {
		s = string(e.Code) + ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches any Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// With is a copy of e with another message for people.
func (e *Error) With(message string) *Error {
	c := *e
	c.Message = message
	c.Fields = maps.Clone(e.Fields)
	return &c
}

// Wrap is a copy of e caused by err.
func (e *Error) Wrap(err error) *Error {
	c := *e
	c.Err = err
	return &c
}

// WithFields is a copy of e with per-field problems.
func (e *Error) WithFields(fields map[string]string) *Error {
	c := *e
	c.Fields = fields
	return &c
}

// NewError makes an Error.
func NewError(kind Kind, code Code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// sentinel is an Error meant for errors.Is, with a text for logs.
func sentinel(kind Kind, code Code, text, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message, text: text}
}

// Failures of a chat turn, local or remote: the runtime's backends, the
// routing, and a host's refusals. Callers test them with errors.Is.
var (
	// ErrUnknownAgent: this node hosts no agent with the id, or its backend
	// names a builtin or kind this node does not have.
	ErrUnknownAgent = sentinel(KindNotFound, CodeUnknownAgent, "unknown agent",
		"No agent has this id; find one at /agents.")
	// ErrBackendTimeout: no complete reply within the turn's time limit.
	ErrBackendTimeout = sentinel(KindTimeout, CodeAgentTimeout, "agent backend timed out",
		"The agent took too long to answer. Try again, or try a shorter message.")
	// ErrBackendUnavailable: the backend could not be reached, broke off, or
	// answered 5xx.
	ErrBackendUnavailable = sentinel(KindUpstream, CodeAgentUnavailable, "agent backend unavailable",
		"The agent could not answer right now. Try again later.")
	// ErrBackendRejected: the backend refused the request (4xx, including 429
	// rate limiting, a JSON-RPC error, or an MCP tool result with isError).
	ErrBackendRejected = sentinel(KindUpstream, CodeAgentRejected, "agent backend rejected the request",
		"The agent's backend refused the request.")
	// ErrReplyTooLarge: the reply (or one line of its stream) exceeded the
	// runtime's limit.
	ErrReplyTooLarge = sentinel(KindUpstream, CodeAgentReplyTooLarge, "agent reply too large",
		"The agent's reply was longer than this node accepts; ask for a shorter answer.")
	// ErrBlockedAddress: the backend URL resolves to a loopback, private,
	// link-local or otherwise non-public address and the node operator has
	// not allowed those (the SSRF guard).
	ErrBlockedAddress = sentinel(KindUpstream, CodeAgentMisconfigured, "agent backend address is not allowed",
		"The agent's backend address is not allowed on this node.")
	// ErrOwnerChanged: the agent's record now names another owner than the
	// one the conversation started with; its history must not be sent.
	ErrOwnerChanged = sentinel(KindConflict, CodeOwnerChanged, "agent has another owner than when the conversation started",
		"This agent now belongs to someone else; start a new conversation.")
	// ErrBadBackendReply: the backend answered, but not in its protocol.
	ErrBadBackendReply = sentinel(KindUpstream, CodeAgentBadReply, "agent backend sent a malformed reply",
		"The agent's backend sent a reply that could not be used.")
	// ErrAgentBusy: the node hosting the agent refused the turn for load.
	ErrAgentBusy = sentinel(KindUnavailable, CodeAgentBusy, "agent host is busy",
		"The node hosting this agent is busy; try again in a minute.")
	// ErrModelBusy: the queue for the agent's model on its host is full
	// (agent/runtime/modelsched); nothing was sent to the model.
	ErrModelBusy = sentinel(KindRateLimited, CodeModelBusy, "agent model busy",
		"The agent's model is busy; try again shortly.")
	// ErrHistoryRequired: the turn left its history out, and the agent's
	// backend reads it (Turn.HistoryOmitted). Nothing was answered; the
	// calling node sends the turn again with its history.
	ErrHistoryRequired = sentinel(KindConflict, CodeHistoryRequired, "turn needs its history",
		"The agent needs the conversation so far; send the message again.")
	// ErrHostUnreachable: the node hosting the agent did not answer.
	ErrHostUnreachable = sentinel(KindUpstream, CodeHostUnreachable, "agent host unreachable",
		"The node hosting this agent could not be reached. It may be offline; try again later.")
)

// Refused delegations: what a model that asked another agent is told.
var (
	// ErrDelegationLoop: the agent asked is already in the message's trace
	// (asking itself, or A→B→A), or was asked MaxVisits times in its tree.
	ErrDelegationLoop = sentinel(KindConflict, CodeDelegationLoop, "delegation loop",
		"That agent is already part of this exchange; asking it again would loop. Answer with what you have.")
	// ErrDelegationDepth: the message has passed MaxHops agents already.
	ErrDelegationDepth = sentinel(KindConflict, CodeDelegationDepth, "delegation too deep",
		"This message has already passed through the most agents allowed; answer with what you have.")
	// ErrDelegationBudget: the turn has made MaxDelegations tool calls, or
	// the message's tree has spent its TreeTurns, or its sender's chat
	// budget (Quota) is spent.
	ErrDelegationBudget = sentinel(KindRateLimited, CodeDelegationBudget, "delegation budget spent",
		"This turn has used all its tool calls; answer with what you have.")
)

// turnErrors are the errors a host may answer a turn with, by code: the
// node-to-node contract carries codes, and the caller gets the same error a
// local turn would have had. A host that predates CodeAgentReplyTooLarge
// sends CodeAgentBadReply for an oversized reply too, which maps to
// ErrBadBackendReply: the message those hosts' callers always showed.
var turnErrors = map[Code]*Error{}

func init() {
	for _, e := range []*Error{ErrUnknownAgent, ErrBackendTimeout, ErrBackendUnavailable, ErrBackendRejected,
		ErrReplyTooLarge, ErrBlockedAddress, ErrOwnerChanged, ErrBadBackendReply, ErrAgentBusy, ErrHostUnreachable,
		ErrModelBusy, ErrDelegationLoop, ErrDelegationDepth, ErrHistoryRequired} {
		turnErrors[e.Code] = e
	}
	turnErrors[CodeRateLimited] = ErrAgentBusy // what hosts before codes were shared sent
}

// TurnError is the turn failure with code, or nil if code is not one.
func TurnError(code Code) *Error { return turnErrors[code] }

// AsError finds the domain Error in err's chain; a ValidationError counts
// as KindInvalid. It returns nil when err carries no domain error.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &Error{Kind: KindInvalid, Code: CodeInvalidInput, Message: "Some fields are invalid; see fields.", Fields: ve.Fields, Err: err}
	}
	return nil
}
