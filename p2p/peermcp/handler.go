package peermcp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"

	libp2phttp "github.com/libp2p/go-libp2p/p2p/http"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/mcpkit/mcpstream"
)

// Agents finds the agents this node hosts.
type Agents interface {
	// HostedAgent returns the record of agent id if this node hosts it and
	// has not deleted it, else an error wrapping agent.ErrUnknownAgent.
	HostedAgent(ctx context.Context, id string) (agent.Record, error)
}

// Answerer answers turns for this node's own agents (agent/runtime's
// Runtime).
type Answerer interface {
	Answer(ctx context.Context, t agent.Turn, emit func(chunk string) error) (string, error)
}

// HandlerConfig is what NewHandler serves with.
type HandlerConfig struct {
	Agents Agents // required
	// Answerer answers the turns; nil refuses them (agent_unavailable).
	Answerer Answerer
	// Detail is the part of an Answer error that is safe to send to the
	// calling node (runtime.PublicMessage); nil sends none.
	Detail func(error) string
	// Allow reports whether a caller ("peer:<id>") may send one more turn
	// now; nil allows every turn.
	Allow   func(caller string) bool
	Logger  *slog.Logger // nil: discard
	Version string       // of this node, told to callers
}

// serverName is the name the host's MCP server goes by.
const serverName = "agentsite-peer"

// handler is the host's side of the contract.
type handler struct {
	cfg HandlerConfig
	srv *server.MCPServer
}

// NewHandler is the MCP server other nodes call over libp2p
// (p2p.Node.ServeMCP): the one tool send_message, for this node's own
// agents. It is stateless: the calling node keeps the conversation and
// sends its history along, and the reply streams back as progress
// notifications. Bodies over MaxBodyBytes get a 413.
func NewHandler(cfg HandlerConfig) http.Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &handler{cfg: cfg}
	h.srv = server.NewMCPServer(serverName, cfg.Version,
		server.WithToolCapabilities(false),
		server.WithRecovery(),
	)
	h.srv.AddTool(mcp.NewToolWithRawSchema(ToolName, toolDescription, toolSchema), h.sendMessage)
	streamable := server.NewStreamableHTTPServer(h.srv,
		server.WithStateLess(true),
		server.WithDisableStreaming(true),
		// Streams carry no Host a browser could rebind; the caller is
		// authenticated by its peer ID.
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(withCaller),
		server.WithStreamableHTTPLogger(cfg.Logger),
	)
	return guard{next: streamable, h: h}
}

// guard caps the body, answers send_message calls itself when it can
// (fastpath.go), and counts flushes for mcpstream.
type guard struct {
	next http.Handler
	h    *handler
}

func (g guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, ok := mcpstream.ReadBody(w, r, MaxBodyBytes)
		if !ok {
			return
		}
		if g.h.serveCall(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	g.next.ServeHTTP(mcpstream.CountFlushes(w, r))
}

// callerKey carries who is calling: "peer:<id>" over libp2p.
type callerKey struct{}

// withCaller puts the caller's rate-limit key into the tool's context.
func withCaller(ctx context.Context, r *http.Request) context.Context {
	caller := "addr:" + r.RemoteAddr // plain HTTP: tests only
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		caller = "addr:" + host
	}
	if id := libp2phttp.ClientPeerID(r); id != "" {
		caller = "peer:" + id.String()
	}
	return context.WithValue(ctx, callerKey{}, caller)
}

func callerFrom(ctx context.Context) string {
	if k, ok := ctx.Value(callerKey{}).(string); ok {
		return k
	}
	return "unknown"
}

// Refusals of the host.
var (
	errRateLimited = agent.NewError(agent.KindRateLimited, agent.CodeRateLimited,
		"This node is answering too many messages from yours; try again in a minute.")
	errNotHosted = agent.ErrUnknownAgent.With("This agent is not hosted here any more.")
	errHostFault = agent.NewError(agent.KindInternal, agent.CodeInternal, "The agent's node failed; try again later.")
	errCanceled  = agent.NewError(agent.KindCanceled, agent.CodeCanceled, "The message was canceled.")
)

// sendMessage answers statelessly with the Answerer: nothing is stored
// here, the calling node stores the conversation. This is the call as
// mcp-go's server hands it over (any protocol version; fastpath.go takes
// the common one first).
func (h *handler) sendMessage(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var in turnArgs
	if err := req.BindArguments(&in); err != nil {
		return badArgs("arguments", "do not match the tool's schema"), nil
	}
	trace, ok := traceOf(req)
	return h.answer(ctx, &in, trace, ok, func() notifier { return mcpstream.New(ctx, h.srv, req) }), nil
}

// notifier streams a turn's chunks and events to the caller: an
// mcpstream.Stream on mcp-go's server, an sseStream on the fast path.
type notifier interface {
	Emit(chunk string) error
	Notify(method string, params map[string]any) error
	// Drain returns once what was sent is on the wire.
	Drain()
}

// answer runs one send_message call: in its arguments, trace from its
// _meta (traceOK false when that broke the limits), stream made once the
// turn is accepted.
func (h *handler) answer(ctx context.Context, in *turnArgs, trace agent.Trace, traceOK bool, stream func() notifier) *mcp.CallToolResult {
	if res := validate(in); res != nil {
		return res
	}
	if h.cfg.Allow != nil && !h.cfg.Allow(callerFrom(ctx)) {
		return toolError(errRateLimited, "")
	}
	rec, err := h.cfg.Agents.HostedAgent(ctx, in.AgentID)
	switch {
	case errors.Is(err, agent.ErrUnknownAgent):
		return toolError(errNotHosted, "")
	case err != nil:
		h.cfg.Logger.ErrorContext(ctx, "peer MCP: reading an agent failed", "agent", in.AgentID, "err", err)
		return toolError(errHostFault, "")
	case in.Owner != nil && *in.Owner != rec.Owner:
		return toolError(agent.ErrOwnerChanged, "")
	case h.cfg.Answerer == nil:
		return toolError(agent.ErrBackendUnavailable, "")
	}
	if !traceOK {
		return badArgs("_meta", "the delegation trace is malformed or over the hop limit")
	}
	// FromPeer: no one here can approve a tool call for this turn.
	unread := false
	turn := agent.Turn{AgentID: in.AgentID, ConversationID: in.ConversationID, History: fromWire(in.History), Text: in.Text, Trace: trace,
		FromPeer: callerFrom(ctx), HistoryOmitted: in.HistoryOmitted, OnHistoryUnread: func() { unread = true }}
	st := stream()
	turn.OnStep = func(s agent.Step) { _ = st.Notify(MethodStep, map[string]any{"step": s}) }
	turn.OnWait = func(n int) { _ = st.Notify(MethodWaiting, map[string]any{"ahead": n}) }
	// The calling node is one caller in a shared model's queue here.
	reply, err := h.cfg.Answerer.Answer(agent.WithCaller(ctx, callerFrom(ctx)), turn, st.Emit)
	st.Drain()
	if err != nil {
		detail := ""
		if h.cfg.Detail != nil {
			detail = h.cfg.Detail(err)
		}
		return withTrace(toolError(answerError(err), detail), trace)
	}
	res := withTrace(mcp.NewToolResultText(reply), trace)
	if unread {
		res.Meta.AdditionalFields[historyMetaKey] = historyUnreadValue
	}
	return res
}

// withTrace answers with the turn's trace in the result's _meta: what the
// caller handed of the tree's budget and this node did not spend comes
// back, with whom its agents asked.
func withTrace(res *mcp.CallToolResult, t agent.Trace) *mcp.CallToolResult {
	res.Meta = &mcp.Meta{AdditionalFields: map[string]any{agent.TraceMetaKey: t}}
	return res
}

// answerError is the code a failed answer goes back with: the domain
// error it carries, else what its context says.
func answerError(err error) *agent.Error {
	if e := agent.AsError(err); e != nil {
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return agent.ErrBackendTimeout
	case errors.Is(err, context.Canceled):
		return errCanceled
	}
	return agent.ErrBackendUnavailable
}

// toolError is a tool error for the calling node: the code and message of
// e, and the backend's public detail, so the caller can show the same
// words it would for a local agent.
func toolError(e *agent.Error, detail string) *mcp.CallToolResult {
	res := mcp.NewToolResultStructured(map[string]any{"error": wireError{Code: e.Code, Message: e.Message, Detail: detail}}, e.Message)
	res.IsError = true
	return res
}

// traceOf reads the delegation trace (agent.TraceMetaKey) from the call's
// _meta: a new one when the message comes from a person, false when it
// breaks the limits. Its budget is what the caller handed (TreeTurns from
// a caller that predates budgets, never more): this node spends no more.
func traceOf(req mcp.CallToolRequest) (agent.Trace, bool) {
	if req.Params.Meta == nil {
		return agent.NewTrace(), true
	}
	t, ok := agent.TraceFrom(req.Params.Meta.AdditionalFields)
	if ok && t.ID == "" {
		t = agent.NewTrace()
	}
	return t, ok
}
