package agent

import "errors"

// Kinds of Runtime.Answer failures. Callers map them to status codes and to
// messages a person can act on with errors.Is; the full error text (which
// may quote the upstream) is for logs.
var (
	// ErrUnknownAgent: this node hosts no agent with the id, or its backend
	// names a builtin or kind this node does not have.
	ErrUnknownAgent = errors.New("unknown agent")
	// ErrBackendTimeout: no complete reply within the turn's time limit.
	ErrBackendTimeout = errors.New("agent backend timed out")
	// ErrBackendUnavailable: the backend could not be reached, broke off, or
	// answered 5xx.
	ErrBackendUnavailable = errors.New("agent backend unavailable")
	// ErrBackendRejected: the backend refused the request (4xx, including 429
	// rate limiting, a JSON-RPC error, or an MCP tool result with isError).
	ErrBackendRejected = errors.New("agent backend rejected the request")
	// ErrReplyTooLarge: the reply (or one line of its stream) exceeded the
	// runtime's limit.
	ErrReplyTooLarge = errors.New("agent reply too large")
	// ErrBlockedAddress: the backend URL resolves to a loopback, private,
	// link-local or otherwise non-public address and the node operator has
	// not allowed those (the SSRF guard).
	ErrBlockedAddress = errors.New("agent backend address is not allowed")
	// ErrOwnerChanged: the agent's record now names another owner than the
	// one the conversation started with; its history must not be sent.
	ErrOwnerChanged = errors.New("agent has another owner than when the conversation started")
	// ErrBadBackendReply: the backend answered, but not in its protocol.
	ErrBadBackendReply = errors.New("agent backend sent a malformed reply")
)
