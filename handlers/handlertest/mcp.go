package handlertest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCP clients for the tests of /mcp and of the node-to-node MCP handler:
// the official MCP Go SDK, so that the servers are tested against another
// implementation than their own.

// MCPEras are the protocol eras a test runs in: the sessionless
// 2026-07-28 (the go-sdk default, "") and the last one with sessions.
var MCPEras = []string{"", "2025-11-25"}

// Chunks collects progress notifications by progress token. The SDK
// hands notifications to the handler asynchronously, so readers wait for
// them and order them by progress.
type Chunks struct {
	mu sync.Mutex
	by map[string]map[float64]string
}

func (c *Chunks) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tok := fmt.Sprint(req.Params.ProgressToken)
	if c.by[tok] == nil {
		c.by[tok] = map[float64]string{}
	}
	c.by[tok][req.Params.Progress] = req.Params.Message
}

// Of returns the chunks of token in progress order, once want of them have
// arrived (or after 2 s).
func (c *Chunks) Of(token string, want int) []string {
	deadline := time.Now().Add(2 * time.Second)
	for {
		c.mu.Lock()
		m := c.by[token]
		keys := make([]float64, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Float64s(keys)
		out := make([]string, 0, len(keys))
		for _, k := range keys {
			out = append(out, m[k])
		}
		c.mu.Unlock()
		if len(out) >= want || time.Now().After(deadline) {
			return out
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// ConnectMCP connects an MCP client to endpoint in protocol version
// (one of MCPEras), closed when t ends.
func ConnectMCP(t *testing.T, endpoint, version string) (*mcp.ClientSession, *Chunks) {
	t.Helper()
	got := &Chunks{by: map[string]map[float64]string{}}
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: got.handler})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect MCP client (%q): %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, got
}

// CallTool calls a tool, with a progress token unless token is "", and
// fails the test on a protocol error.
func CallTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, token string) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != "" {
		p.SetProgressToken(token)
	}
	res, err := cs.CallTool(t.Context(), p)
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// ResultText is the text contents of a tool result.
func ResultText(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

// Structured decodes a result's structured content into T.
func Structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
	return v
}
