// Package fakenotes is a small MCP tool server over Streamable HTTP: a
// notebook with a read-only tool (list_notes) and a destructive one
// (save_note). It is what tests of tool approvals call, and the demo's
// planner's tool server (docs/agents.md, "Tools and approvals"), where it
// is labelled as a demo.
package fakenotes

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// Tool names.
const (
	ToolList = "list_notes"
	ToolSave = "save_note"
)

// maxNotes bounds the notebook: the oldest note goes first.
const maxNotes = 100

// Notes is the notebook and its MCP server. Serve it with Handler.
type Notes struct {
	mu    sync.Mutex
	notes []string
	saves int
	h     http.Handler
}

// New is an empty notebook.
func New() *Notes {
	n := &Notes{}
	s := server.NewMCPServer("notes", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool(ToolList, mcp.WithDescription("Lists the notes saved so far."),
		mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n.mu.Lock()
			defer n.mu.Unlock()
			if len(n.notes) == 0 {
				return mcp.NewToolResultText("(no notes yet)"), nil
			}
			return mcp.NewToolResultText("- " + strings.Join(n.notes, "\n- ")), nil
		})
	s.AddTool(mcp.NewTool(ToolSave, mcp.WithDescription("Saves a note in the notebook."),
		mcp.WithString("text", mcp.Required(), mcp.Description("the note")),
		mcp.WithReadOnlyHintAnnotation(false), mcp.WithDestructiveHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text := strings.TrimSpace(req.GetString("text", ""))
			if text == "" {
				return mcp.NewToolResultError(`save_note wants {"text": "..."}`), nil
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			n.saves++
			n.notes = append(n.notes, text)
			if len(n.notes) > maxNotes {
				n.notes = n.notes[1:]
			}
			return mcp.NewToolResultText("saved: " + text), nil
		})
	n.h = server.NewStreamableHTTPServer(s)
	return n
}

// Handler serves the MCP endpoint (Streamable HTTP).
func (n *Notes) Handler() http.Handler { return n.h }

// Saves is how many times save_note ran.
func (n *Notes) Saves() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.saves
}

// Notes are the notes saved, oldest first.
func (n *Notes) Notes() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.notes...)
}

// Script is a scripted model (fakellm) that uses the notebook: to a
// message "note <text>" it lists the notes, then saves <text> and answers
// with the save's result ("done: saved: <text>", or what it was told
// instead); any other message it answers "say: note <text>".
func Script(req fakellm.Request) fakellm.Reply {
	text, ok := strings.CutPrefix(strings.TrimSpace(req.LastUser()), "note ")
	if !ok {
		return fakellm.Reply{Text: "say: note <text>"}
	}
	switch res := req.ToolResults(); len(res) {
	case 0:
		return fakellm.Reply{Text: "Looking. ", Calls: []fakellm.ToolCall{fakellm.Call("l1", offered(req, ToolList), map[string]string{})}}
	case 1:
		return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("s1", offered(req, ToolSave), map[string]string{"text": text})}}
	default:
		return fakellm.Reply{Text: "done: " + res[len(res)-1]}
	}
}

// offered is the name the model was offered tool under ("<server>__<tool>").
func offered(req fakellm.Request, tool string) string {
	for _, raw := range req.Tools {
		var t struct{ Function struct{ Name string } }
		if json.Unmarshal(raw, &t) == nil && strings.HasSuffix(t.Function.Name, "__"+tool) {
			return t.Function.Name
		}
	}
	return tool
}
