package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// CodeBadArguments: a tool was called with arguments it cannot use (MCP's
// own failure; the use cases' codes are agent's).
const CodeBadArguments = agent.CodeBadArguments

// errRateLimited: the caller spent its chat budget.
var errRateLimited = agent.NewError(agent.KindRateLimited, agent.CodeRateLimited, "Too many messages; wait a minute and try again.")

// badArgs is the error of a malformed argument.
func badArgs(field, problem string) error {
	return agent.NewError(agent.KindInvalid, CodeBadArguments, "Argument "+field+" "+problem+".")
}

// turnFailed is the error of a turn that failed in a conversation, which
// the tool error names so that the client can carry on in it.
type turnFailed struct {
	err            error
	conversationID string
}

func (t *turnFailed) Error() string { return t.err.Error() }
func (t *turnFailed) Unwrap() error { return t.err }

// handle adapts a tool handler to mcp-go: the error it returns becomes the
// call's tool error (toolError), so every tool fails the same way.
func (p *public) handle(h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := h(ctx, req)
		if err != nil {
			return p.toolError(ctx, req.Params.Name, err), nil
		}
		return res, nil
	}
}

// toolError is a tool result with isError set, for err as httpkit.Classify
// maps it on every surface: the message, in words a person (or a model)
// can act on, as text, and {"error": {code, message, fields}} (plus the
// conversation of a failed turn) as structured content. A server-side
// failure is logged; its text is never shown.
func (p *public) toolError(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	e := httpkit.Classify(err)
	if e.Status >= 500 {
		p.s.Logger.ErrorContext(ctx, "MCP tool failed", "tool", tool, "err", err)
	}
	ej := map[string]any{"code": e.Code, "message": e.Message}
	text := e.Message
	if len(e.Fields) > 0 {
		ej["fields"] = e.Fields
		text += fieldsText(e.Fields)
	}
	structured := map[string]any{"error": ej}
	if tf := (*turnFailed)(nil); errors.As(err, &tf) && tf.conversationID != "" {
		structured["conversation_id"] = tf.conversationID
		text += "\nconversation_id: " + tf.conversationID
	}
	res := mcp.NewToolResultStructured(structured, text)
	res.IsError = true
	return res
}

// fieldsText renders validation fields for a tool error, sorted.
func fieldsText(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n%s: %s", k, fields[k])
	}
	return b.String()
}
