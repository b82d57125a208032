package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/libp2p/go-libp2p/core/peer"
	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// remotePair is node A (the portal people use) and node B, which hosts an
// echo agent A knows about.
func remotePair(t testing.TB) (a, b *clusterNode, onB apiAgent) {
	t.Helper()
	a = startClusterNode(t, nodeOpts{})
	b = startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}})
	onB = b.register("remote-echo")
	waitfor.Until(t, 15*time.Second, "A to see B's agent online", func() bool {
		code, got := a.agent(onB.ID)
		return code == http.StatusOK && got.Status == "online" && !got.Local
	})
	return a, b, onB
}

// collect gathers the chunks a turn emits.
type collect struct {
	mu    sync.Mutex
	parts []string
}

func (c *collect) emit(s string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.parts = append(c.parts, s)
	return nil
}

func (c *collect) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.parts)
}

// TestRemoteAgentOverLibp2p: A talks to B's agent over MCP on libp2p, with
// mcp-go's client on go-libp2p's HTTP over streams, directly and through
// every way people chat (the message API, the WebSocket, A's own /mcp).
// Then B stops mid-conversation and comes back.
func TestRemoteAgentOverLibp2p(t *testing.T) {
	checkNoLeaks(t)
	a, b, onB := remotePair(t)
	ctx := t.Context()

	t.Run("mcp-go client over libp2p streams", func(t *testing.T) {
		hh := &libp2phttp.Host{StreamHost: a.m.Node.Host()}
		hc, err := hh.NamespacedClient(agent.MCPProtocol, peer.AddrInfo{ID: b.pid()})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := transport.NewStreamableHTTP("http://b/", transport.WithHTTPBasicClient(&hc))
		if err != nil {
			t.Fatal(err)
		}
		c := mcpclient.NewClient(tr)
		defer c.Close()
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var progress []string
		var mu sync.Mutex
		c.OnNotification(func(n mcpgo.JSONRPCNotification) {
			if msg, ok := n.Params.AdditionalFields["message"].(string); ok && n.Method == "notifications/progress" {
				mu.Lock()
				progress = append(progress, msg)
				mu.Unlock()
			}
		})
		if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
			t.Fatal(err)
		}
		tools, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(tools.Tools) != 1 || tools.Tools[0].Name != "send_message" {
			t.Fatalf("B's peer tools: %+v", tools.Tools)
		}
		var req mcpgo.CallToolRequest
		req.Params.Name = "send_message"
		req.Params.Arguments = map[string]any{"agent_id": onB.ID, "text": "over the streams"}
		req.Params.Meta = &mcpgo.Meta{ProgressToken: "x"}
		res, err := c.CallTool(ctx, req)
		if err != nil || res.IsError {
			t.Fatalf("send_message over libp2p: %v %+v", err, res)
		}
		if txt := res.Content[0].(mcpgo.TextContent).Text; txt != "over the streams" {
			t.Errorf("reply %q", txt)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(progress) < 2 {
			t.Errorf("progress notifications over libp2p: %q", progress)
		}
	})

	t.Run("peermcp.Client.Send streams in order", func(t *testing.T) {
		var got collect
		const text = "one two three four five"
		reply, err := a.m.Peers.Send(ctx, b.peerID(), agent.Turn{AgentID: onB.ID, Text: text,
			History: []agent.ChatMessage{{Role: "user", Text: "before"}, {Role: "agent", Text: "before"}}}, got.emit)
		if err != nil || reply != text {
			t.Fatalf("Send = %q, %v", reply, err)
		}
		if parts := got.get(); len(parts) != 5 || strings.Join(parts, "") != text {
			t.Errorf("chunks %q", parts)
		}
		_, err = a.m.Peers.Send(ctx, b.peerID(), agent.Turn{AgentID: a.register("only-on-a").ID, Text: "hi"}, nil)
		if !errors.Is(err, agent.ErrUnknownAgent) {
			t.Errorf("turn for an agent B does not host: %v", err)
		}
		// A conversation bound to another owner than B's record names.
		_, err = a.m.Peers.Send(ctx, b.peerID(), agent.Turn{AgentID: onB.ID, Text: "hi", Owner: "someone-else"}, nil)
		if !errors.Is(err, agent.ErrOwnerChanged) {
			t.Errorf("turn bound to another owner: %v", err)
		}
	})

	var convID string
	t.Run("message API on A", func(t *testing.T) {
		code, body := a.api("POST", "/api/v1/agents/"+onB.ID+"/messages", map[string]string{"text": "hello from A"})
		var out struct {
			ConversationID string `json:"conversation_id"`
			Reply          string `json:"reply"`
		}
		_ = json.Unmarshal(body, &out)
		if code != http.StatusOK || out.Reply != "hello from A" {
			t.Fatalf("POST messages: %d %s", code, body)
		}
		convID = out.ConversationID
	})

	t.Run("WebSocket on A", func(t *testing.T) {
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar}
		resp, err := hc.Get(a.m.HTTPURL() + "/chat/" + onB.ID) // sets the session
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		d := websocket.Dialer{Jar: jar, HandshakeTimeout: 5 * time.Second}
		ws, _, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(a.m.HTTPURL(), "http")+"/api/v1/chat", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		const text = "streams arrive in pieces"
		if err := ws.WriteJSON(map[string]string{"type": "message", "agent_id": onB.ID, "text": text}); err != nil {
			t.Fatal(err)
		}
		var chunks []string
		_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
		for {
			var f struct{ Type, Text, Code, Message string }
			if err := ws.ReadJSON(&f); err != nil {
				t.Fatal(err)
			}
			if f.Type == "chunk" {
				chunks = append(chunks, f.Text)
				continue
			}
			if f.Type == "started" {
				continue
			}
			if f.Type != "done" {
				t.Fatalf("frame %+v", f)
			}
			break
		}
		if len(chunks) < 3 || strings.Join(chunks, "") != text {
			t.Errorf("WebSocket chunks %q", chunks)
		}
	})

	t.Run("go-sdk client on A's /mcp", func(t *testing.T) {
		var mu sync.Mutex
		var progress int
		c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) { mu.Lock(); progress++; mu.Unlock() },
		})
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: a.m.HTTPURL() + "/mcp", MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		p := &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{"agent_id": onB.ID, "text": "via mcp on A"}}
		p.SetProgressToken("m1")
		res, err := cs.CallTool(ctx, p)
		if err != nil || res.IsError {
			t.Fatalf("send_message via A: %v %+v", err, res)
		}
		if txt := res.Content[0].(*sdk.TextContent).Text; txt != "via mcp on A" {
			t.Errorf("reply %q", txt)
		}
		waitfor.Until(t, 2*time.Second, "progress notifications", func() bool { mu.Lock(); defer mu.Unlock(); return progress >= 2 })
	})

	// B goes away mid-conversation: a clear error, and the conversation
	// keeps what was said (and the error).
	bDir, bPeer := b.dir, b.peerID()
	b.stop()
	code, body := a.api("POST", "/api/v1/agents/"+onB.ID+"/messages", map[string]string{"text": "are you there?", "conversation_id": convID})
	var e struct {
		Error struct{ Code, Message string }
	}
	_ = json.Unmarshal(body, &e)
	if code != http.StatusBadGateway && code != http.StatusServiceUnavailable || (e.Error.Code != "host_unreachable" && e.Error.Code != "agent_offline") {
		t.Fatalf("turn with B down: %d %s", code, body)
	}
	t.Logf("with B down: %d %s: %s", code, e.Error.Code, e.Error.Message)
	msgs, err := a.m.Store.ListMessages(ctx, convID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{"user", "agent", "user", "error"}) {
		t.Errorf("conversation after the failure: %v", roles)
	}
	if _, err := a.m.Peers.Send(ctx, bPeer, agent.Turn{AgentID: onB.ID, Text: "x"}, nil); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Errorf("Send to a stopped node: %v", err)
	} else {
		t.Logf("Send to a stopped node: %v", err)
	}

	// B is back (same data dir, same peer id): the conversation goes on.
	startClusterNode(t, nodeOpts{dir: bDir, bootstrap: []string{a.addr()}})
	waitfor.Until(t, 15*time.Second, "chat with B's agent to work again", func() bool {
		code, _ := a.api("POST", "/api/v1/agents/"+onB.ID+"/messages", map[string]string{"text": "welcome back", "conversation_id": convID})
		return code == http.StatusOK
	})
	// The continued turns read their history from A's read cache, checked
	// against the database each time.
	if hits := a.metric("agentsite_conversation_cache_reads_total", "result", "hit"); hits == 0 {
		t.Errorf("no history read was answered from the read cache (misses %v)", a.metric("agentsite_conversation_cache_reads_total", "result", "miss"))
	}
}

// BenchmarkRemoteTurn measures one send_message over libp2p between two
// whole nodes on loopback (A's peermcp.Client.Send to B's echo agent: MCP
// over go-libp2p's HTTP over streams, a three-word reply streamed as three
// progress notifications), and the same turn as A's portal runs it
// (chat.Chat.Turn: conversation and messages stored, then libp2p;
// the chat rate limit of the HTTP entry points is left out). Run with:
//
//	go test -run '^$' -bench BenchmarkRemoteTurn -benchtime 200x ./cmd/agentsite/
func BenchmarkRemoteTurn(b *testing.B) {
	a, host, onB := remotePair(b)
	ctx := context.Background()
	turn := agent.Turn{AgentID: onB.ID, Text: "hello remote agent"}
	// Warm-up: the connection and the cached MCP client.
	if _, err := a.m.Peers.Send(ctx, host.peerID(), turn, nil); err != nil {
		b.Fatal(err)
	}
	b.Run("libp2p", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := a.m.Peers.Send(ctx, host.peerID(), turn, func(string) error { return nil }); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		reportLatency(b, ds)
	})
	b.Run("portal-turn", func(b *testing.B) {
		var ds []time.Duration
		for b.Loop() {
			start := time.Now()
			if _, err := a.m.Server.Chat.Turn(ctx, "bench", chat.Request{AgentID: onB.ID, Text: "hello remote agent"}, func(string) error { return nil }); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(start))
		}
		reportLatency(b, ds)
	})
}

func reportLatency(b *testing.B, ds []time.Duration) {
	b.ReportMetric(percentileMS(ds, 0.50), "p50-ms")
	b.ReportMetric(percentileMS(ds, 0.90), "p90-ms")
	b.ReportMetric(percentileMS(ds, 0.99), "p99-ms")
	b.Logf("%d turns: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms", len(ds), percentileMS(ds, 0.5), percentileMS(ds, 0.9), percentileMS(ds, 0.99))
}
