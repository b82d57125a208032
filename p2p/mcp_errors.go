package p2p

import (
	"strings"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// resultText is the reply: the text content of a send_message result.
func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// RemoteError is a turn the hosting node answered with an error. Its Kind
// is the matching agent.Err* sentinel (or ErrRemoteBusy, ErrRemoteFailed),
// so callers classify it as they would a local failure; its text ends in
// ": " + Detail when the host sent the backend's public summary.
type RemoteError struct {
	Code    string // the host's machine code: unknown_agent, agent_timeout, ...
	Message string // the host's message for people (bounded, single line)
	Detail  string // the backend's public summary, if any (bounded, single line)
	Kind    error
}

func (e *RemoteError) Error() string {
	s := "agent host answered " + e.Code + ": " + e.Kind.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap lets errors.Is match Kind.
func (e *RemoteError) Unwrap() error { return e.Kind }

// remoteKinds maps a host's error codes (handlers' turnError codes) to the
// errors a local turn would have had.
var remoteKinds = map[string]error{
	"unknown_agent":       agent.ErrUnknownAgent,
	"agent_timeout":       agent.ErrBackendTimeout,
	"agent_rejected":      agent.ErrBackendRejected,
	"agent_misconfigured": agent.ErrBlockedAddress,
	"agent_bad_reply":     agent.ErrBadBackendReply,
	"agent_unavailable":   agent.ErrBackendUnavailable,
	"agent_changed_owner": agent.ErrOwnerChanged,
	"rate_limited":        ErrRemoteBusy,
}

// remoteError reads a host's tool error ({"error": {code, message, detail}}).
func remoteError(res *mcp.CallToolResult) error {
	e := &RemoteError{Code: "unknown", Kind: ErrRemoteFailed}
	if sc, ok := res.StructuredContent.(map[string]any); ok {
		if ej, ok := sc["error"].(map[string]any); ok {
			code, _ := ej["code"].(string)
			msg, _ := ej["message"].(string)
			detail, _ := ej["detail"].(string)
			e.Code, e.Message, e.Detail = boundText(code, 64), boundText(msg, 300), boundText(detail, 200)
		}
	}
	if e.Message == "" {
		e.Message = boundText(resultText(res), 300)
	}
	if k, ok := remoteKinds[e.Code]; ok {
		e.Kind = k
	}
	return e
}

// boundText makes text from another node fit for a message: one line, no
// control characters, at most max runes.
func boundText(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}
