package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestAPIToolCallStep: an llm agent whose model calls a tool of its MCP
// server answers from the result, the reply's steps carry the call (tool,
// server, arguments, result, time), the stored conversation keeps it, and
// the server's secret shows in none of the API's answers.
func TestAPIToolCallStep(t *testing.T) {
	const secret = "tool-secret-e51a"
	s := server.NewMCPServer("weather", "1.0.0")
	s.AddTool(mcp.NewTool("forecast", mcp.WithString("city", mcp.Required()), mcp.WithReadOnlyHintAnnotation(true)),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("sunny in " + req.GetString("city", "?")), nil
		})
	h := server.NewStreamableHTTPServer(s)
	mcpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+secret {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(mcpSrv.Close)
	model := &fakellm.Server{Model: "demo", Script: func(req fakellm.Request) fakellm.Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return fakellm.Reply{Text: "The forecast: " + res[0]}
		}
		for _, raw := range req.Tools {
			var tool struct{ Function struct{ Name string } }
			_ = json.Unmarshal(raw, &tool)
			if strings.HasSuffix(tool.Function.Name, "__forecast") {
				return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("f1", tool.Function.Name, map[string]string{"city": "Lyon"})}}
			}
		}
		return fakellm.Reply{Text: "no tool offered"}
	}}
	llmSrv := httptest.NewServer(model)
	t.Cleanup(llmSrv.Close)

	e := NewChat(t)
	e.AllowPrivateEndpoints()
	auth := []string{"Authorization", "Bearer " + e.UserToken("alice")}
	in := SimpleInput("weather-bot", "Weather Bot")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: llmSrv.URL + "/v1", Model: "demo",
		Tools: []agent.ToolServer{{URL: mcpSrv.URL + "/mcp", Secret: secret}}}
	id := e.SeedAgent("alice", in).Record.ID

	out := send(t, e, id, apiwire.MessageIn{Text: "weather in Lyon?"}, auth...)
	if out.Reply != "The forecast: sunny in Lyon" {
		t.Errorf("reply %q", out.Reply)
	}
	host := strings.TrimPrefix(mcpSrv.URL, "http://")
	if len(out.Steps) != 1 {
		t.Fatalf("steps %+v", out.Steps)
	}
	st := out.Steps[0]
	if st.Tool != runtime.StepToolCall || st.Name != "forecast" || st.Server != host+"/mcp" || st.Text != `{"city":"Lyon"}` ||
		st.Reply != "sunny in Lyon" || !st.Done || st.Error != "" {
		t.Errorf("step %+v", st)
	}
	for _, path := range []string{"/api/v1/agents/" + id, "/api/v1/conversations/" + out.ConversationID} {
		resp := e.Do(http.MethodGet, path, nil, auth...)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || strings.Contains(string(body), secret) {
			t.Errorf("GET %s: %d, secret shown: %t", path, resp.StatusCode, strings.Contains(string(body), secret))
		}
		if strings.HasPrefix(path, "/api/v1/conversations/") && !strings.Contains(string(body), `"name":"forecast"`) {
			t.Errorf("the stored conversation lacks the step: %s", body)
		}
	}
}

// TestAPIToolApproval: a reply that waits for a tool's approval says so
// (needs_input, the approval's id, tool, server and arguments, and how to
// answer); posting the approval runs the call and the turn goes on; a
// deny runs nothing; an unknown approval is refused saying what to do.
func TestAPIToolApproval(t *testing.T) {
	notes := fakenotes.New()
	mcpSrv := httptest.NewServer(notes.Handler())
	t.Cleanup(mcpSrv.Close)
	llmSrv := httptest.NewServer(&fakellm.Server{Model: "demo", Script: fakenotes.Script})
	t.Cleanup(llmSrv.Close)

	e := NewChat(t)
	e.AllowPrivateEndpoints()
	auth := []string{"Authorization", "Bearer " + e.UserToken("alice")}
	in := SimpleInput("note-bot", "Note Bot")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: llmSrv.URL + "/v1", Model: "demo",
		Tools: []agent.ToolServer{{URL: mcpSrv.URL + "/mcp"}}}
	id := e.SeedAgent("alice", in).Record.ID

	out := send(t, e, id, apiwire.MessageIn{Text: "note buy milk"}, auth...)
	ap := out.Approval
	if !out.NeedsInput || ap == nil || ap.Tool != "save_note" || ap.Args != `{"text":"buy milk"}` || ap.ID == "" ||
		!strings.Contains(ap.Server, "/mcp") || !strings.Contains(ap.Answer, `"approval"`) || !strings.Contains(out.Reply, "save_note") {
		t.Fatalf("paused reply %+v (approval %+v)", out, ap)
	}
	if notes.Saves() != 0 {
		t.Fatalf("save_note ran before approval")
	}
	done := send(t, e, id, apiwire.MessageIn{ConversationID: out.ConversationID, Approval: &agent.ApprovalAnswer{ID: ap.ID, Approve: true}}, auth...)
	if done.Reply != "done: saved: buy milk" || done.NeedsInput || done.Approval != nil || notes.Saves() != 1 {
		t.Errorf("after approval %+v, saves %d", done, notes.Saves())
	}

	out = send(t, e, id, apiwire.MessageIn{Text: "note sell cow"}, auth...)
	if out.Approval == nil {
		t.Fatalf("no approval: %+v", out)
	}
	denied := send(t, e, id, apiwire.MessageIn{ConversationID: out.ConversationID, Approval: &agent.ApprovalAnswer{ID: out.Approval.ID}}, auth...)
	if !strings.Contains(denied.Reply, "denied") || notes.Saves() != 1 {
		t.Errorf("after deny %+v, saves %d", denied, notes.Saves())
	}

	resp := e.Do("POST", "/api/v1/agents/"+id+"/messages", apiwire.MessageIn{ConversationID: out.ConversationID,
		Approval: &agent.ApprovalAnswer{ID: out.Approval.ID, Approve: true}}, auth...)
	WantStatus(t, resp, http.StatusNotFound)
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), "unknown_approval") || !strings.Contains(string(body), "Send your request again") {
		t.Errorf("unknown approval: %s", body)
	}
}
