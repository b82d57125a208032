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

	"github.com/libp2p/go-libp2p/core/network"
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
	// SpeaksMCPLines reports whether the node serves the lines protocol
	// (agent.MCPLinesProtocol) as far as this node knows (identify).
	SpeaksMCPLines(hostPeerID string) bool
	// OpenMCPLines opens a stream to the node in the lines protocol;
	// errors wrap agent.ErrHostUnreachable or are ctx's.
	OpenMCPLines(ctx context.Context, hostPeerID string) (network.Stream, error)
}

// ClientConfig configures NewClient; zero values take defaults.
type ClientConfig struct {
	Logger  *slog.Logger // nil: discard
	Version string       // of this node, told to hosts
	// noLean calls every host through mcp-go's client, noLines never in
	// the lines protocol (tests compare).
	noLean, noLines bool
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
	ids    atomic.Uint64 // of lines calls
	unread unreadAgents

	linesMu sync.Mutex // guards lines, closed
	lines   map[string]*linesSlot
	closed  bool
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
	return &Client{net: net, cfg: cfg, pool: mcppool.New[string, *conn](clientIdle), lines: map[string]*linesSlot{}}
}

// Close closes the clients of every host: turns in flight end with an
// error, and Send fails after it.
func (c *Client) Close() error {
	c.closeLines()
	return c.pool.Close()
}

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
	call, done, err := c.route(ctx, hostPeerID)
	if err != nil {
		return "", err
	}
	broken := false
	defer func() { done(broken) }()
	// An agent whose host said it does not read the history gets the turn
	// without it; if that changed, the host refuses before answering and
	// the turn goes again with the history.
	key := hostPeerID + " " + t.AgentID
	omit := len(t.History) > 0 && c.unread.has(key)
	reply, unread, broken, err := c.sendOnce(ctx, call, hostPeerID, t, emit, omit)
	if omit && errors.Is(err, agent.ErrHistoryRequired) {
		c.unread.forget(key)
		reply, unread, broken, err = c.sendOnce(ctx, call, hostPeerID, t, emit, false)
	}
	if err == nil {
		c.unread.set(key, unread)
	}
	return reply, err
}

// callFunc sends one send_message call to a host and returns its result;
// the host's notifications of the call (its progress token) go to sink. A
// failure to reach the host or to read its answer is a *transport.Error.
type callFunc func(ctx context.Context, token string, sink *progressSink, req mcp.CallToolRequest, args turnArgs) (*mcp.CallToolResult, error)

// route picks how a turn goes to the host: on the host's lines stream when
// it speaks the lines protocol (client_lines.go), else through the host's
// pooled MCP client over HTTP. done gives the pooled client back,
// broken or not.
func (c *Client) route(ctx context.Context, hostPeerID string) (call callFunc, done func(broken bool), err error) {
	if !c.cfg.noLines && c.net.SpeaksMCPLines(hostPeerID) {
		return func(ctx context.Context, token string, sink *progressSink, req mcp.CallToolRequest, args turnArgs) (*mcp.CallToolResult, error) {
			return c.linesCall(ctx, hostPeerID, token, sink, req, args)
		}, func(bool) {}, nil
	}
	cn, release, err := c.pool.Acquire(ctx, hostPeerID, func(ctx context.Context) (*conn, error) { return c.dial(ctx, hostPeerID) })
	switch {
	case ctx.Err() != nil:
		return nil, nil, ctx.Err()
	case errors.Is(err, mcppool.ErrClosed):
		return nil, nil, fmt.Errorf("%w: %w", agent.ErrHostUnreachable, err)
	case err != nil:
		return nil, nil, err
	}
	return cn.call, release, nil
}

// call is a callFunc on the pooled client: a lean call to a host that
// speaks MCP 2026-07-28, else mcp-go's.
func (cn *conn) call(ctx context.Context, token string, sink *progressSink, req mcp.CallToolRequest, args turnArgs) (*mcp.CallToolResult, error) {
	cn.sinks.Store(token, sink)
	defer cn.sinks.Delete(token)
	if cn.lean {
		return cn.leanCall(ctx, cn.ids.Add(1), req, args)
	}
	return cn.c.CallTool(ctx, req)
}

// sendOnce sends the turn once with call, without its history if omit,
// and reports whether the host said the agent does not read the history,
// and whether the way it went broke.
func (c *Client) sendOnce(ctx context.Context, call callFunc, hostPeerID string, t agent.Turn, emit func(string) error, omit bool) (reply string, unread, broken bool, err error) {
	tctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	token := "t" + strconv.FormatUint(c.tokens.Add(1), 10)
	sink := &progressSink{emit: emit, cancel: cancel, onStep: t.OnStep, onWait: t.OnWait}

	var req mcp.CallToolRequest
	req.Params.Name = ToolName
	if omit {
		t.History = nil // not copied only to be dropped
	}
	args := turnArguments(t)
	if omit {
		args.History, args.HistoryOmitted = nil, true
	}
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
	res, err := call(tctx, token, sink, req, args)
	settle(returnedTrace(res))
	if serr := sink.finish(); serr != nil {
		return "", false, false, serr
	}
	if err != nil {
		var te *transport.Error
		switch {
		case ctx.Err() != nil:
			return "", false, false, ctx.Err()
		case errors.Is(tctx.Err(), context.DeadlineExceeded):
			return "", false, false, fmt.Errorf("%w: agent host %s: no reply within %s: %w", agent.ErrBackendTimeout, hostPeerID, turnTimeout, context.DeadlineExceeded)
		case errors.As(err, &te):
			return "", false, true, fmt.Errorf("%w: %s: %v", agent.ErrHostUnreachable, hostPeerID, err)
		}
		return "", false, true, fmt.Errorf("%w: agent host %s failed the turn: %v", agent.ErrBackendUnavailable, hostPeerID, err)
	}
	if res.IsError {
		return "", false, false, remoteError(res)
	}
	reply = resultText(res)
	// The host's MCP library may drop the last progress notifications of a
	// fast reply; the result has the whole text, so the rest goes out now.
	if rest, ok := strings.CutPrefix(reply, sink.text.String()); ok && rest != "" && emit != nil {
		if err := emit(rest); err != nil {
			return "", false, false, err
		}
	}
	return reply, historyUnread(res), false, nil
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
