package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
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
// .ci/run) and the scripts that drive it.
var mcpTSDir = filepath.Join("..", "..", "testdata", "mcp-ts")

// needTSClient skips (fails in CI) when node or the SDK is missing.
func needTSClient(t *testing.T) {
	t.Helper()
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
}

// TestMCPCatalogueWithTypeScriptClient: the official TypeScript client
// reads an agent as the resource agentsite://agents/{id} (its A2A card and
// its listing), completes agent ids and tags, gets the agent's chat
// prompt, and, subscribed to the resource, is told when the listing
// changes.
func TestMCPCatalogueWithTypeScriptClient(t *testing.T) {
	needTSClient(t)
	env, echo := newMCPTestServer(t, nil)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(mcpTSDir, "mcp-catalogue.mjs"), env.TS.URL+"/mcp", echo.ID, "mcp-")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	next := func(v any) {
		t.Helper()
		if !lines.Scan() {
			_ = cmd.Wait()
			t.Fatalf("the TypeScript client stopped early: %v\n%s", lines.Err(), stderr.String())
		}
		if err := json.Unmarshal(lines.Bytes(), v); err != nil {
			t.Fatalf("client output %q: %v", lines.Text(), err)
		}
	}

	var got struct {
		Capabilities struct {
			Resources   struct{ Subscribe bool }
			Completions *struct{}
			Prompts     *struct{}
		}
		Templates []string
		Resources []string
		Read      []struct{ URI, MimeType, Text string }
		IDs       []string
		Tags      []string
		Prompts   []string
		Prompt    string
	}
	next(&got)
	uri := "agentsite://agents/" + echo.ID
	if !got.Capabilities.Resources.Subscribe || got.Capabilities.Completions == nil || got.Capabilities.Prompts == nil {
		t.Errorf("capabilities %+v: want resource subscriptions, completions and prompts", got.Capabilities)
	}
	if !slices.Contains(got.Templates, "agentsite://agents/{id}") || !slices.Contains(got.Templates, "agentsite://tags/{tag}") {
		t.Errorf("resource templates %v", got.Templates)
	}
	if !slices.Contains(got.Resources, uri) {
		t.Errorf("resources/list %v lacks the local agent %s", got.Resources, uri)
	}
	if len(got.Read) != 1 || got.Read[0].URI != uri || got.Read[0].MimeType != "application/json" {
		t.Fatalf("read %s: %+v", uri, got.Read)
	}
	var entry struct {
		Card struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		} `json:"card"`
		Listing struct {
			ID   string   `json:"id"`
			Tags []string `json:"tags"`
		} `json:"listing"`
	}
	if err := json.Unmarshal([]byte(got.Read[0].Text), &entry); err != nil {
		t.Fatalf("resource text %s: %v", got.Read[0].Text, err)
	}
	if entry.Listing.ID != echo.ID || !slices.Contains(entry.Listing.Tags, "mcp-test") || entry.Card.URL != env.TS.URL+"/a2a/"+echo.ID || entry.Card.Name == "" {
		t.Errorf("resource %s: %s; want the listing and the A2A card", uri, got.Read[0].Text)
	}
	if !slices.Contains(got.IDs, echo.ID) {
		t.Errorf("completion of id %q: %v, want %s", echo.ID[:6], got.IDs, echo.ID)
	}
	if !slices.Equal(got.Tags, []string{"mcp-test"}) {
		t.Errorf("completion of tag \"mcp-\": %v, want [mcp-test]", got.Tags)
	}
	if !slices.Contains(got.Prompts, "chat_with_agent") || !slices.Contains(got.Prompts, "chat_with_echo-bot") {
		t.Errorf("prompts/list %v", got.Prompts)
	}
	if !strings.Contains(got.Prompt, "send_message") || !strings.Contains(got.Prompt, echo.ID) || strings.Contains(got.Prompt, "IGNORE") {
		t.Errorf("chat prompt %q: want send_message with the id, and no registered text", got.Prompt)
	}

	var sub struct{ Subscribed bool }
	next(&sub)
	WantStatus(t, env.Do("PUT", "/api/v1/agents/"+echo.ID, map[string]any{
		"name": "echo-bot", "display_name": "Echo Bot", "description": "A new description.", "tags": []string{"mcp-test"},
		"backend": map[string]string{"kind": "builtin", "builtin": "echo"},
	}, "Authorization", "Bearer "+OperatorToken), http.StatusOK)
	var upd struct{ Updated *string }
	next(&upd)
	if upd.Updated == nil || *upd.Updated != uri {
		t.Errorf("after the listing changed the client was told %v, want notifications/resources/updated for %s\n%s", upd.Updated, uri, stderr.String())
	}
}
