package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent/runtime/mcpstream"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/handlers/mcpserver"
)

// What mcp_peer.go (node-to-node MCP) still needs here, until it moves to
// p2p/peermcp; the public /mcp is handlers/mcpserver. Delete this file
// with mcp_peer.go.

// Peer MCP limits. A turn from a peer carries the conversation so far
// (p2p trims it to fit 1 MiB).
const (
	maxPeerMCPBodyBytes = 1 << 20
	maxMCPHistory       = 100       // earlier messages a peer may send with a turn
	maxMCPReplyBytes    = 256 << 10 // one history entry (agent replies are ≤ 64 KiB by default)
)

// PeerMCPHandler is the MCP server other nodes call over libp2p: a single
// tool, send_message, for this node's own agents. It is stateless: the
// calling portal node keeps the conversation and sends its history along,
// and the reply streams back as progress notifications.
func (s *Server) PeerMCPHandler() http.Handler {
	// A portal forwards many people's turns, so a peer's budget is 100
	// people's: a safety valve against one misbehaving node, not a quota.
	p := &mcpPeer{s: s, limits: httpkit.NewRates(100 * s.Config.ChatRateLimit)}
	p.srv = server.NewMCPServer("agentsite-peer", s.Config.Version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	p.addTools()
	streamable := server.NewStreamableHTTPServer(p.srv,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		// Streams carry no Host a browser could rebind; the caller is
		// authenticated by its peer ID.
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(withCaller),
		server.WithStreamableHTTPLogger(s.Logger),
	)
	return peerGuard{next: streamable}
}

// peerGuard caps the body and counts flushes for mcpstream.
type peerGuard struct{ next http.Handler }

func (g peerGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, ok := mcpstream.ReadBody(w, r, maxPeerMCPBodyBytes)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	g.next.ServeHTTP(mcpstream.CountFlushes(w, r))
}

// callerKey carries who is calling a tool: the remote peer ID (libp2p),
// else the client's IP, for rate limits.
type callerKey struct{}

// withCaller puts the caller's rate-limit key into the tool's context.
func withCaller(ctx context.Context, r *http.Request) context.Context {
	if id := libp2phttp.ClientPeerID(r); id != "" {
		return context.WithValue(ctx, callerKey{}, "peer:"+id.String())
	}
	return context.WithValue(ctx, callerKey{}, "ip:"+httpkit.ClientKey(r))
}

func callerFrom(ctx context.Context) string {
	if k, ok := ctx.Value(callerKey{}).(string); ok {
		return k
	}
	return "unknown"
}

// rawTool is a tool with a JSON Schema written out.
func rawTool(name, description string, schema json.RawMessage) mcp.Tool {
	return mcp.NewToolWithRawSchema(name, description, schema)
}

// badArgs is the tool error for malformed arguments, built by mcp_peer.go's
// one tool-error builder.
func badArgs(field, problem string) *mcp.CallToolResult {
	return peerError(httpkit.Errorf(http.StatusBadRequest, string(mcpserver.CodeBadArguments), "Argument "+field+" "+problem+"."), "")
}

// turnStream gives mcp_peer.go mcpstream's Stream under its old names.
type turnStream struct{ *mcpstream.Stream }

func (t turnStream) emit(chunk string) error { return t.Emit(chunk) }
func (t turnStream) drain()                  { t.Drain() }

func newTurnStream(ctx context.Context, srv *server.MCPServer, req mcp.CallToolRequest) turnStream {
	return turnStream{mcpstream.New(ctx, srv, req)}
}

// progressToken hands the call on to newTurnStream: mcpstream reads the
// progress token itself.
func progressToken(req mcp.CallToolRequest) mcp.CallToolRequest { return req }
