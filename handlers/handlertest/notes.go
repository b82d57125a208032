package handlertest

import (
	"net/http/httptest"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
)

// SeedNotesAgent registers owner's llm agent whose scripted model
// (fakenotes.Script) uses a notebook MCP server with a read-only and a
// destructive tool: "note <text>" lists the notes, then asks to save
// <text>, which waits for approval (docs/agents.md, "Tools and
// approvals"). It returns the agent's id and the notebook. Private
// endpoints are allowed; the env answers with the real runtime.
func (e *Env) SeedNotesAgent(owner, name string, allow ...string) (string, *fakenotes.Notes) {
	t := e.T
	t.Helper()
	notes := fakenotes.New()
	mcpSrv := httptest.NewServer(notes.Handler())
	t.Cleanup(mcpSrv.Close)
	llmSrv := httptest.NewServer(&fakellm.Server{Model: "demo", Script: fakenotes.Script})
	t.Cleanup(llmSrv.Close)
	e.AllowPrivateEndpoints()
	in := SimpleInput(name, "Note Bot")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: llmSrv.URL + "/v1", Model: "demo",
		Tools: []agent.ToolServer{{URL: mcpSrv.URL + "/mcp", Allow: allow}}}
	return e.SeedAgent(owner, in).Record.ID, notes
}
