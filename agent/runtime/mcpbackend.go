package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/mcpkit/mcppool"
)

// answerMCP sends the turn as a tools/call of b.Tool on a remote MCP server
// (Streamable HTTP) and replies with the text of the result.
func (r *Runtime) answerMCP(ctx context.Context, b agent.Backend, t agent.Turn, emit func(string) error) (string, error) {
	var reply string
	err := withMCPSession(ctx, b.APIKey, func(ctx context.Context) (err error) {
		reply, err = r.callMCP(ctx, b, t)
		return err
	})
	if err != nil {
		return "", err
	}
	return reply, emit(reply)
}

// withMCPSession runs call, which uses a pooled session, once more on a
// fresh session if the server had forgotten the first (it restarted), and
// classifies its failure with what the HTTP layer saw of it (key, the
// server's secret, redacted from what it says).
func withMCPSession(ctx context.Context, key string, call func(ctx context.Context) error) error {
	st := &mcpCallState{key: key}
	ctx = withMCPState(ctx, st)
	for attempt := 0; ; attempt++ {
		err := call(ctx)
		if err == nil {
			return nil
		}
		if attempt == 0 && errors.Is(err, transport.ErrSessionTerminated) && ctx.Err() == nil {
			continue
		}
		return explainMCP(err, st)
	}
}

// callMCP makes one attempt on a (possibly cached) client.
func (r *Runtime) callMCP(ctx context.Context, b agent.Backend, t agent.Turn) (string, error) {
	c, release, err := r.mcp.acquire(ctx, b)
	if err != nil {
		return "", err
	}
	broken := true
	defer func() { release(broken) }()

	tool, ok, err := c.tool(ctx, b.Tool)
	if err != nil {
		return "", err
	}
	if !ok {
		broken = false
		return "", kindError(agent.ErrBackendRejected, agent.BackendMCP, fmt.Sprintf("the MCP server has no tool %q", b.Tool))
	}
	var req mcp.CallToolRequest
	req.Params.Name = b.Tool
	req.Params.Arguments = toolArguments(tool, t)
	res, err := c.client.CallTool(ctx, req)
	if err != nil {
		var te *transport.Error
		broken = errors.As(err, &te) // a JSON-RPC error leaves the session usable
		return "", err
	}
	broken = false
	text, err := toolResultText(res, r.opts.MaxReplyBytes)
	if err != nil {
		return "", err
	}
	if res.IsError {
		e := kindError(agent.ErrBackendRejected, agent.BackendMCP, sanitize(text, b.APIKey))
		if e.Public == "" {
			e.Public = "the tool reported an error"
		}
		return "", e
	}
	return text, nil
}

// toolArguments fills the tool's text parameter: "text", or the first of
// "message", "query", "input", "prompt" its input schema has, or its one
// required parameter. The history goes along if the schema has "history".
func toolArguments(tool mcp.Tool, t agent.Turn) map[string]any {
	props := tool.InputSchema.Properties
	name := "text"
	if _, ok := props[name]; !ok && len(props) > 0 {
		for _, alt := range []string{"message", "query", "input", "prompt"} {
			if _, ok := props[alt]; ok {
				name = alt
				break
			}
		}
		if _, ok := props[name]; !ok && len(tool.InputSchema.Required) == 1 {
			name = tool.InputSchema.Required[0]
		}
	}
	args := map[string]any{name: t.Text}
	if _, ok := props["history"]; ok {
		h := make([]webhookMessage, 0, len(t.History))
		for _, m := range t.History {
			if m.Role == agent.RoleUser || m.Role == agent.RoleAgent {
				h = append(h, webhookMessage{Role: m.Role, Text: m.Text})
			}
		}
		args["history"] = h
	}
	return args
}

// toolResultText joins the text blocks of a result, or, if it has none,
// renders its structured content as JSON.
func toolResultText(res *mcp.CallToolResult, maxReply int) (string, error) {
	var parts []string
	n := 0
	for _, c := range res.Content {
		var s string
		switch tc := c.(type) {
		case mcp.TextContent:
			s = tc.Text
		case *mcp.TextContent:
			s = tc.Text
		default:
			continue
		}
		n += len(s)
		if n > maxReply {
			return "", fmt.Errorf("%w: more than %d bytes", agent.ErrReplyTooLarge, maxReply)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		j, err := json.Marshal(res.StructuredContent)
		if err == nil && len(j) <= maxReply {
			return string(j), nil
		}
	}
	if len(parts) == 0 && !res.IsError {
		return "", kindError(agent.ErrBadBackendReply, agent.BackendMCP, "the tool result has no text")
	}
	return strings.Join(parts, "\n"), nil
}

// explainMCP classifies what mcp-go returned, using what the HTTP layer
// saw; errors it cannot place go to Runtime.classify.
func explainMCP(err error, st *mcpCallState) error {
	status, tooLarge, badType := st.get()
	var be *BackendError
	var authErr *transport.AuthorizationRequiredError
	var te *transport.Error
	switch {
	case errors.Is(err, agent.ErrReplyTooLarge): // classified already (dialError)
		return err
	case tooLarge:
		return fmt.Errorf("%w: an MCP response exceeded the limit", agent.ErrReplyTooLarge)
	case badType:
		return &BackendError{Kind: agent.ErrBadBackendReply, Backend: agent.BackendMCP, Public: "the server did not answer like an MCP server", Err: err}
	case errors.As(err, &be):
		return be
	case errors.As(err, &authErr):
		return &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendMCP, Status: http.StatusUnauthorized, Public: "HTTP 401 Unauthorized"}
	case errors.Is(err, transport.ErrLegacySSEServer):
		return &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendMCP, Status: status, Public: "the server does not speak MCP over Streamable HTTP"}
	case errors.As(err, &te) && status >= 400 && status < 500 && !errors.Is(err, transport.ErrSessionTerminated):
		return &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendMCP, Status: status, Public: fmt.Sprintf("HTTP %d %s", status, http.StatusText(status)), Err: err}
	case errors.As(err, &te), errors.Is(err, mcppool.ErrClosed), errors.Is(err, transport.ErrSessionTerminated):
		return err // network trouble: Runtime.classify decides
	case errors.Is(err, mcp.ErrInternalError):
		return &BackendError{Kind: agent.ErrBackendUnavailable, Backend: agent.BackendMCP, Public: "the MCP server failed", Upstream: sanitize(err.Error(), st.key)}
	case isJSONError(err):
		return &BackendError{Kind: agent.ErrBadBackendReply, Backend: agent.BackendMCP, Public: "the MCP server's answer could not be read", Err: err}
	}
	// A JSON-RPC error response: the server refused the call.
	return &BackendError{Kind: agent.ErrBackendRejected, Backend: agent.BackendMCP, Upstream: sanitize(err.Error(), st.key), Public: "the MCP server refused the call"}
}

// isJSONError reports a malformed result.
func isJSONError(err error) bool {
	var se *json.SyntaxError
	var ue *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &ue)
}
