package portal_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// mcpTSDir holds the official TypeScript MCP SDK (pinned, npm ci in
// .ci/run) and the script that drives it.
var mcpTSDir = filepath.Join("..", "..", "testdata", "mcp-ts")

// TestMCPSnippetWithTypeScriptClient: the agent page's "Use this agent"
// MCP snippets, pasted as they are into the official TypeScript MCP
// client, reach that agent: the config names the transport ("type":
// "http") and the node's /mcp, and the tool call (send_message with the
// agent's agent_id) gets the agent's reply.
func TestMCPSnippetWithTypeScriptClient(t *testing.T) {
	script := filepath.Join(mcpTSDir, "mcp-client.mjs")
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(mcpTSDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		missing = "the SDK is not installed: npm ci --prefix testdata/mcp-ts"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("TypeScript MCP client test: %s (CI=true: it is required)", missing)
		}
		t.Skipf("TYPESCRIPT MCP SDK NOT AVAILABLE: %s — skipping; in CI this is a failure", missing)
	}
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")

	doc := e.Page("/agents/"+id, http.StatusOK)
	cfg := Text(MustTestid(t, doc, "use-mcp"))
	call := Text(MustTestid(t, doc, "use-mcp-tool"))
	if !strings.HasPrefix(call, "send_message ") || !strings.Contains(call, `"agent_id":"`+id+`"`) {
		t.Errorf("tool call snippet %q, want send_message with agent_id %s", call, id)
	}
	help, _ := MustTestid(t, doc, "use-mcp-help").Attr("href")
	hdoc := e.Page(help, http.StatusOK, "Accept", "text/html")
	if got := Text(MustTestid(t, hdoc, "mcp-tool-call")); got != call {
		t.Errorf("/mcp?agent= tool call %q, want the agent page's %q", got, call)
	}
	if Text(MustTestid(t, hdoc, "mcp-config")) != cfg {
		t.Errorf("/mcp config differs from the agent page's:\n%s\n%s", Text(MustTestid(t, hdoc, "mcp-config")), cfg)
	}
	if n := hdoc.Find(`[data-testid="mcp-help"] [data-testid="copy"]`).Length(); n < 3 {
		t.Errorf("/mcp has %d Copy buttons, want one per snippet (at least 3)", n)
	}

	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", script, path, call).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node mcp-client.mjs: %v\n%s\nconfig:\n%s", err, ee.Stderr, cfg)
		}
		t.Fatalf("node mcp-client.mjs: %v", err)
	}
	var got struct {
		Transport, Server string
		Tools             []string
		Reply             struct {
			AgentID        string `json:"agent_id"`
			ConversationID string `json:"conversation_id"`
			Reply, Text    string
		}
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if got.Transport != "http" || !slices.Contains(got.Tools, "send_message") {
		t.Errorf("client saw transport %q, tools %q", got.Transport, got.Tools)
	}
	if got.Reply.AgentID != id || got.Reply.Reply != "Hello" || got.Reply.ConversationID == "" {
		t.Errorf("send_message reply = %+v, want the echo's Hello from %s", got.Reply, id)
	}
}
