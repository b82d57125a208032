package peermcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/mcpkit/mcppool"
)

// Network is how the client reaches other nodes (p2p.Node).
type Network interface {
	// ConnectHost makes sure there is a connection to the node; errors
	// wrap agent.ErrHostUnreachable or are ctx's.
	ConnectHost(ctx context.Context, hostPeerID string) error
	// MCPClient is an HTTP client whose requests reach the node's
	// NewHandler over libp2p streams.
	MCPClient(hostPeerID string) (*http.Client, error)
}

// ClientConfig configures NewClient; zero values take defaults.
type ClientConfig struct {
	Logger  *slog.Logger // nil: discard
	Version string       // of this node, told to hosts
	// noLean calls every host through mcp-go's client (tests compare).
	noLean bool
}

// Client sends turns to the agents other nodes host. It keeps one
// initialized MCP client per host (the hosts' servers are stateless, so a
// client survives reconnections). It is safe for concurrent use; Close
// ends it.
type Client struct {
	net    Network
	cfg    ClientConfig
	pool   *mcppool.Pool[string, *conn]
	tokens atomic.Uint64
}

// conn is the pooled MCP client of one host, with the turns waiting for
// its progress notifications.
type conn struct {
	c     *client.Client
	sinks sync.Map // progress token → *progressSink
	// lean is set when the host speaks MCP 2026-07-28: send_message then
	// goes as a lean call (client_lean.go) with http to url, its ids from
	// ids.
	lean bool
	http *http.Client
	url  string
	ids  atomic.Uint64
}

// Close ends the client.
func (c *conn) Close() error { return c.c.Close() }

// NewClient returns a Client that reaches hosts through net.
func NewClient(net Network, cfg ClientConfig) *Client {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{net: net, cfg: cfg, pool: mcppool.New[string, *conn](clientIdle)}
}

// Close closes the clients of every host: turns in flight end with an
// error, and Send fails after it.
func (c *Client) Close() error { return c.pool.Close() }

// Send sends a chat turn to the agent's hosting node (send_message with a
// progress token), calls emit with each chunk of the reply in order as it
// streams, and returns the whole reply. Errors match the agent.Error a
// local turn would have had: agent.ErrHostUnreachable (cannot reach the
// host), agent.ErrBackendTimeout (no reply in time), the error of the
// host's code (a *RemoteError: agent.ErrAgentBusy when it refused for
// load, agent.ErrBackendUnavailable for a code it does not know), or ctx's;
// an error from emit is returned as is.
func (c *Client) Send(ctx context.Context, hostPeerID string, t agent.Turn, emit func(string) error) (string, error) {
	if err := c.net.ConnectHost(ctx, hostPeerID); err != nil {
		return "", err
	}
	cn, release, err := c.pool.Acquire(ctx, hostPeerID, func(ctx context.Context) (*conn, error) { return c.dial(ctx, hostPeerID) })
	switch {
	case ctx.Err() != nil:
		return "", ctx.Err()
	case errors.Is(err, mcppool.ErrClosed):
		return "", fmt.Errorf("%w: %w", agent.ErrHostUnreachable, err)
	case err != nil:
		return "", err
	}
	broken := false
	defer func() { release(broken) }()

	tctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	token := "t" + strconv.FormatUint(c.tokens.Add(1), 10)
	sink := &progressSink{emit: emit, cancel: cancel, onStep: t.OnStep, onWait: t.OnWait}
	cn.sinks.Store(token, sink)
	defer cn.sinks.Delete(token)

	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	args := turnArguments(t)
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	settle := func(agent.Trace, bool) {}
	if t.Trace.ID != "" {
		// The host is handed all the tree's budget left and answers with
		// what it did not spend; a host that does not say spent it all.
		var sent agent.Trace
		sent, settle = t.Trace.Handoff(agent.TreeTurns)
		req.Params.Meta.AdditionalFields = map[string]any{agent.TraceMetaKey: sent}
	}
	var res *mcp.CallToolResult
	if cn.lean {
		res, err = cn.leanCall(tctx, cn.ids.Add(1), req, args)
	} else {
		res, err = cn.c.CallTool(tctx, req)
	}
	settle(returnedTrace(res))
	if serr := sink.finish(); serr != nil {
		return "", serr
	}
	if err != nil {
		var te *transport.Error
		switch {
		case ctx.Err() != nil:
			return "", ctx.Err()
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			return "", fmt.Errorf("%w: agent host %s: no reply within %s: %w", agent.ErrBackendTimeout, hostPeerID, turnTimeout, context.DeadlineExceeded)
		case errors.As(err, &te):
			broken = true
			return "", fmt.Errorf("%w: %s: %v", agent.ErrHostUnreachable, hostPeerID, err)
		}
		broken = true
		return "", fmt.Errorf("%w: agent host %s failed the turn: %v", agent.ErrBackendUnavailable, hostPeerID, err)
	}
	if res.IsError {
		return "", remoteError(res)
	}
	reply := resultText(res)
	// The host's MCP library may drop the last progress notifications of a
	// fast reply; the result has the whole text, so the rest goes out now.
	if rest, ok := strings.CutPrefix(reply, sink.text.String()); ok && rest != "" && emit != nil {
		if err := emit(rest); err != nil {
			return "", err
		}
	}
	return reply, nil
}

// turnArguments is send_message's input for a host: the turn and the
// latest earlier messages, at most MaxHistory of them and maxHistoryBytes
// of text.
func turnArguments(t agent.Turn) turnArgs {
	hist := t.History
	if len(hist) > MaxHistory {
		hist = hist[len(hist)-MaxHistory:]
	}
	for size, i := 0, len(hist)-1; i >= 0; i-- {
		if size += len(hist[i].Text); size > maxHistoryBytes {
			hist = hist[i+1:]
			break
		}
	}
	h := make([]historyItem, 0, len(hist))
	for _, m := range hist {
		h = append(h, historyItem{Role: m.Role, Text: m.Text})
	}
	owner := t.Owner
	return turnArgs{AgentID: t.AgentID, Text: t.Text, ConversationID: t.ConversationID, History: h, Owner: &owner}
}

// dial makes an initialized MCP client for the host, over libp2p streams.
func (c *Client) dial(ctx context.Context, hostPeerID string) (*conn, error) {
	fail := func(err error) (*conn, error) {
		return nil, fmt.Errorf("%w: %s: MCP: %v", agent.ErrHostUnreachable, hostPeerID, err)
	}
	hc, err := c.net.MCPClient(hostPeerID)
	if err != nil {
		return nil, err
	}
	url := "http://" + hostPeerID + "/"
	tr, err := transport.NewStreamableHTTP(url,
		transport.WithHTTPBasicClient(hc),
		transport.WithHTTPLogger(c.cfg.Logger))
	if err != nil {
		return fail(err)
	}
	mc := client.NewClient(tr)
	ictx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	if err := mc.Start(ictx); err != nil {
		_ = mc.Close()
		return fail(err)
	}
	cn := &conn{c: mc, http: hc, url: url}
	mc.OnNotification(cn.onNotification)
	var init mcp.InitializeRequest
	init.Params.ClientInfo = mcp.Implementation{Name: "agentsite", Version: c.cfg.Version}
	got, err := mc.Initialize(ictx, init)
	if err != nil {
		_ = mc.Close()
		return fail(err)
	}
	cn.lean = got.ProtocolVersion == fastVersion && !c.cfg.noLean
	return cn, nil
}
