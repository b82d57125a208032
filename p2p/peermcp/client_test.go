package peermcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p"
)

// mcpTestNode starts a bare node (no DHT) on loopback.
func mcpTestNode(t *testing.T) *p2p.Node {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := p2p.New(t.Context(), key, p2p.Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// mcpTestHost is a node serving a stand-in for NewHandler, as a host of
// another version might: send_message echoes the text word by word as
// progress notifications, except for a few agent ids that answer with a
// host's errors (one with a code this node does not know).
func mcpTestHost(t *testing.T) *p2p.Node {
	t.Helper()
	n := mcpTestNode(t)
	srv := server.NewMCPServer("test-host", "1", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("send_message"), func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		id := req.GetString("agent_id", "")
		text := req.GetString("text", "")
		switch id {
		case "timeout", "unknown_agent", "agent_changed_owner", "rate_limited", "made_up":
			res := mcp.NewToolResultStructured(map[string]any{"error": map[string]any{
				"code": id, "message": "The host says " + id + ".", "detail": "detail\nof " + id,
			}}, "The host says "+id+".")
			res.IsError = true
			if id == "timeout" {
				res.StructuredContent.(map[string]any)["error"].(map[string]any)["code"] = "agent_timeout"
			}
			return res, nil
		case "silent": // no progress at all: the client sends the text itself
			return mcp.NewToolResultText(text), nil
		}
		tok := req.Params.Meta.ProgressToken
		for i, w := range strings.SplitAfter(text, " ") {
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{"progressToken": tok, "progress": float64(i + 1), "message": w})
			time.Sleep(time.Millisecond) // lets the notifications go out before the result
		}
		return mcp.NewToolResultText(text), nil
	})
	h := server.NewStreamableHTTPServer(srv, server.WithStateLess(true), server.WithDisableLocalhostProtection(true))
	if err := n.ServeMCP(h); err != nil {
		t.Fatal(err)
	}
	if err := n.ServeMCP(h); err == nil {
		t.Fatal("MCP served twice")
	}
	return n
}

// mcpIntroduce lets a dial b.
func mcpIntroduce(a, b *p2p.Node) {
	a.Host().Peerstore().AddAddrs(b.Host().ID(), b.Host().Addrs(), peerstore.TempAddrTTL)
}

// testClient is a Client on node n, closed with the test.
func testClient(t *testing.T, n *p2p.Node) *Client {
	t.Helper()
	c := NewClient(n, ClientConfig{Version: "test"})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestSendStreamsAndMapsErrors(t *testing.T) {
	host := mcpTestHost(t)
	portal := mcpTestNode(t)
	mcpIntroduce(portal, host)
	client := testClient(t, portal)
	ctx := t.Context()

	// Many turns at once on the one cached client: each gets its own
	// chunks, in order.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			text := fmt.Sprintf("turn %d says hello", i)
			var got []string
			reply, err := client.Send(ctx, host.PeerID(), agent.Turn{AgentID: "echo", Text: text}, func(s string) error {
				got = append(got, s)
				return nil
			})
			// The reply is exact. The chunks stream in order; under this
			// much concurrency mcp-go may route a progress notification to
			// a stream that already ended, so one may be missing (the final
			// result, and the done frame the portal sends, are whole).
			if err != nil || reply != text || !orderedSubsequence(got, strings.SplitAfter(text, " ")) || len(got) < 2 {
				t.Errorf("turn %d: %q %v, chunks %q", i, reply, err, got)
			}
		})
	}
	wg.Wait()

	var got []string
	reply, err := client.Send(ctx, host.PeerID(), agent.Turn{AgentID: "silent", Text: "all at once"}, func(s string) error {
		got = append(got, s)
		return nil
	})
	if err != nil || reply != "all at once" || strings.Join(got, "") != "all at once" {
		t.Errorf("reply without progress: %q %v, chunks %q", reply, err, got)
	}

	stop := errors.New("reader went away")
	_, err = client.Send(ctx, host.PeerID(), agent.Turn{AgentID: "echo", Text: "a b c d e f"}, func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("emit failure: %v", err)
	}

	for id, want := range map[string]error{
		"timeout":             agent.ErrBackendTimeout,
		"unknown_agent":       agent.ErrUnknownAgent,
		"agent_changed_owner": agent.ErrOwnerChanged,
		"rate_limited":        agent.ErrAgentBusy,
		"made_up":             agent.ErrBackendUnavailable,
	} {
		_, err := client.Send(ctx, host.PeerID(), agent.Turn{AgentID: id, Text: "x"}, nil)
		var re *RemoteError
		if !errors.Is(err, want) || !errors.As(err, &re) || !strings.HasSuffix(err.Error(), ": detail of "+id) {
			t.Errorf("%s: %v, want %v", id, err, want)
		}
	}
}

func TestSendUnreachable(t *testing.T) {
	portal := mcpTestNode(t)
	client := testClient(t, portal)
	gone := mcpTestNode(t)
	mcpIntroduce(portal, gone)
	goneID := gone.PeerID()
	_ = gone.Close()

	for name, id := range map[string]string{"stopped": goneID, "no peer id": "nope", "itself": portal.PeerID()} {
		// A caller's deadline half the turn's and far over the connect
		// limits: the client must give up by those limits (how fast that
		// is depends on the machine), not wait for the caller's.
		ctx, cancel := context.WithTimeout(t.Context(), turnTimeout/2)
		_, err := client.Send(ctx, id, agent.Turn{AgentID: "x", Text: "x"}, nil)
		late := ctx.Err() != nil
		cancel()
		if !errors.Is(err, agent.ErrHostUnreachable) || late {
			t.Errorf("%s: %v (ran into the caller's deadline: %t)", name, err, late)
		}
	}
	// A peer without an MCP server: reachable, but not for MCP.
	plain := mcpTestNode(t)
	mcpIntroduce(portal, plain)
	if _, err := client.Send(t.Context(), plain.PeerID(), agent.Turn{AgentID: "x", Text: "x"}, nil); !errors.Is(err, agent.ErrHostUnreachable) {
		t.Errorf("a node without MCP: %v", err)
	}
}

func TestTurnArgumentsTrimsHistory(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	var hist []agent.ChatMessage
	for i := range 20 {
		hist = append(hist, agent.ChatMessage{Role: "user", Text: fmt.Sprint(i, big)})
	}
	args := turnArguments(agent.Turn{AgentID: "a", Text: "t", History: hist, Owner: "alice"})
	if args.Owner == nil || *args.Owner != "alice" {
		t.Errorf("owner = %v, want alice (the host checks the conversation's agent owner)", args.Owner)
	}
	h := args.History
	size := 0
	for _, m := range h {
		size += len(m.Text)
	}
	if size > maxHistoryBytes || len(h) == 0 || !strings.HasPrefix(h[len(h)-1].Text, "19") {
		t.Errorf("kept %d messages, %d bytes, last %.3q", len(h), size, h[len(h)-1].Text)
	}
}

// orderedSubsequence reports whether got is want with zero or more
// elements left out, order kept.
func orderedSubsequence(got, want []string) bool {
	i := 0
	for _, g := range got {
		for i < len(want) && want[i] != g {
			i++
		}
		if i == len(want) {
			return false
		}
		i++
	}
	return true
}

// TestHostErrorsMapBack: a turn through NewHandler on another node fails
// with the same agent.Error a local turn would have, detail included.
func TestHostErrorsMapBack(t *testing.T) {
	h := newTestHost(t)
	var over atomic.Bool // the portal is over the host's limit
	var portalID atomic.Value
	h.cfg.Allow = func(caller string) bool { return caller != "peer:"+portalID.Load().(string) || !over.Load() }
	host := mcpTestNode(t)
	if err := host.ServeMCP(NewHandler(h.cfg)); err != nil {
		t.Fatal(err)
	}
	portal := mcpTestNode(t)
	portalID.Store(portal.PeerID())
	mcpIntroduce(portal, host)
	client := testClient(t, portal)
	send := func(id string, owner string) (string, error) {
		return client.Send(t.Context(), host.PeerID(), agent.Turn{AgentID: id, Text: "hello there", Owner: owner}, nil)
	}

	if reply, err := send(h.echo, ""); err != nil || reply != "hello there" {
		t.Fatalf("echo: %q, %v", reply, err)
	}
	for name, tc := range map[string]struct {
		id, owner string
		want      *agent.Error
	}{
		"not hosted":    {h.missing, "", agent.ErrUnknownAgent},
		"owner changed": {h.echo, "alice", agent.ErrOwnerChanged},
		"refused":       {h.rejects, "", agent.ErrBackendRejected},
		"too slow":      {h.slow, "", agent.ErrBackendTimeout},
	} {
		_, err := send(tc.id, tc.owner)
		if e := agent.AsError(err); !errors.Is(err, tc.want) || e == nil || e.Code != tc.want.Code {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if _, err := send(h.rejects, ""); !strings.HasSuffix(err.Error(), ": HTTP 403 Forbidden") {
		t.Errorf("refused: %q does not end in the backend's detail", err)
	}
	over.Store(true)
	if _, err := send(h.echo, ""); !errors.Is(err, agent.ErrAgentBusy) {
		t.Errorf("over the host's limit: %v", err)
	}
}
