package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
)

// mcpTestNode starts a bare node (no DHT) on loopback.
func mcpTestNode(t *testing.T) *Node {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(t.Context(), key, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

// mcpTestHost is a node serving a stand-in for handlers.PeerMCPHandler:
// send_message echoes the text word by word as progress notifications,
// except for a few agent ids that answer with a host's errors.
func mcpTestHost(t *testing.T) *Node {
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
func mcpIntroduce(a, b *Node) {
	a.Host().Peerstore().AddAddrs(b.Host().ID(), b.Host().Addrs(), peerstore.TempAddrTTL)
}

func TestSendTurnStreamsAndMapsErrors(t *testing.T) {
	host := mcpTestHost(t)
	portal := mcpTestNode(t)
	mcpIntroduce(portal, host)
	ctx := t.Context()

	// Many turns at once on the one cached client: each gets its own
	// chunks, in order.
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			text := fmt.Sprintf("turn %d says hello", i)
			var got []string
			reply, err := portal.SendTurn(ctx, host.PeerID(), agent.Turn{AgentID: "echo", Text: text}, func(s string) error {
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
	reply, err := portal.SendTurn(ctx, host.PeerID(), agent.Turn{AgentID: "silent", Text: "all at once"}, func(s string) error {
		got = append(got, s)
		return nil
	})
	if err != nil || reply != "all at once" || strings.Join(got, "") != "all at once" {
		t.Errorf("reply without progress: %q %v, chunks %q", reply, err, got)
	}

	stop := errors.New("reader went away")
	_, err = portal.SendTurn(ctx, host.PeerID(), agent.Turn{AgentID: "echo", Text: "a b c d e f"}, func(string) error { return stop })
	if !errors.Is(err, stop) {
		t.Errorf("emit failure: %v", err)
	}

	for id, want := range map[string]error{
		"timeout":             agent.ErrBackendTimeout,
		"unknown_agent":       agent.ErrUnknownAgent,
		"agent_changed_owner": agent.ErrOwnerChanged,
		"rate_limited":        ErrRemoteBusy,
		"made_up":             ErrRemoteFailed,
	} {
		_, err := portal.SendTurn(ctx, host.PeerID(), agent.Turn{AgentID: id, Text: "x"}, nil)
		var re *RemoteError
		if !errors.Is(err, want) || !errors.As(err, &re) || !strings.HasSuffix(err.Error(), ": detail of "+id) {
			t.Errorf("%s: %v, want %v", id, err, want)
		}
	}
}

func TestSendTurnUnreachable(t *testing.T) {
	portal := mcpTestNode(t)
	gone := mcpTestNode(t)
	mcpIntroduce(portal, gone)
	goneID := gone.PeerID()
	_ = gone.Close()

	for name, id := range map[string]string{"stopped": goneID, "no peer id": "nope", "itself": portal.PeerID()} {
		start := time.Now()
		_, err := portal.SendTurn(t.Context(), id, agent.Turn{AgentID: "x", Text: "x"}, nil)
		if !errors.Is(err, ErrHostUnreachable) {
			t.Errorf("%s: %v", name, err)
		}
		if d := time.Since(start); d > mcpConnectTimeout+time.Second {
			t.Errorf("%s: took %s", name, d)
		}
	}
	// A peer without an MCP server: reachable, but not for MCP.
	plain := mcpTestNode(t)
	mcpIntroduce(portal, plain)
	if _, err := portal.SendTurn(t.Context(), plain.PeerID(), agent.Turn{AgentID: "x", Text: "x"}, nil); !errors.Is(err, ErrHostUnreachable) {
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
	if args["owner"] != "alice" {
		t.Errorf("owner = %v, want alice (the host checks the conversation's agent owner)", args["owner"])
	}
	h := args["history"].([]map[string]string)
	size := 0
	for _, m := range h {
		size += len(m["text"])
	}
	if size > maxHistoryBytes || len(h) == 0 || !strings.HasPrefix(h[len(h)-1]["text"], "19") {
		t.Errorf("kept %d messages, %d bytes, last %.3q", len(h), size, h[len(h)-1]["text"])
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
