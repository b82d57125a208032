package peermcp

import (
	"encoding/json"
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

// RemoteError is a turn the hosting node answered with an error. It
// matches (errors.Is, agent.AsError) Kind, the agent.Error of the host's
// code, so callers classify it as they would a local failure; its text
// ends in ": " + Detail when the host sent the backend's public summary.
type RemoteError struct {
	Code    agent.Code // the host's code: unknown_agent, agent_timeout, ...
	Message string     // the host's message for people (bounded, single line)
	Detail  string     // the backend's public summary, if any (bounded, single line)
	Kind    *agent.Error
}

func (e *RemoteError) Error() string {
	s := "agent host answered " + string(e.Code) + ": " + e.Kind.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap lets errors.Is match Kind.
func (e *RemoteError) Unwrap() error { return e.Kind }

// remoteError reads a host's tool error ({"error": wireError}). A code
// this node does not know means the host failed the turn somehow:
// agent.ErrBackendUnavailable.
func remoteError(res *mcp.CallToolResult) error {
	var body struct{ Error wireError }
	if raw, err := json.Marshal(res.StructuredContent); err == nil {
		_ = json.Unmarshal(raw, &body)
	}
	w := body.Error
	e := &RemoteError{
		Code:    agent.Code(boundText(string(w.Code), 64)),
		Message: boundText(w.Message, 300),
		Detail:  boundText(w.Detail, 200),
	}
	if e.Code == "" {
		e.Code = "unknown"
	}
	if e.Message == "" {
		e.Message = boundText(resultText(res), 300)
	}
	if e.Kind = agent.TurnError(e.Code); e.Kind == nil {
		e.Kind = agent.ErrBackendUnavailable
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

// returnedTrace is the trace a host answered with, which says what it
// left of the budget it was handed; ok is false when it sent none (a host
// that predates the budget) or one that breaks the limits.
func returnedTrace(res *mcp.CallToolResult) (agent.Trace, bool) {
	if res == nil || res.Meta == nil {
		return agent.Trace{}, false
	}
	if _, found := res.Meta.AdditionalFields[agent.TraceMetaKey]; !found {
		return agent.Trace{}, false
	}
	return agent.TraceFrom(res.Meta.AdditionalFields)
}
