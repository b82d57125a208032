// Package runtime answers turns for this node's own agents: Runtime.Answer
// and the backends (builtin, llm, mcp, webhook, a2a), the one guarded outbound
// HTTP client with its SSRF guard, and (in mcppool) the one pool of MCP
// clients, which p2p/peermcp uses too.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// RuntimeOptions configure NewRuntime; zero values take the defaults.
type RuntimeOptions struct {
	// AllowPrivate lets backends live on loopback, private and link-local
	// addresses (--allow-private-endpoints).
	AllowPrivate bool
	// Allow lets backends live at these endpoints of the operator's own
	// networks (--allow-endpoint), without opening the rest.
	Allow AllowList
	// Timeout bounds one turn, streaming included. Default 60s.
	Timeout time.Duration
	// MaxReplyBytes bounds a reply. Default 64 KiB.
	MaxReplyBytes int
	// UserAgent is sent on every outbound request. Default "AgentSite".
	UserAgent string
	// Logger receives backend failures. Default: discard.
	Logger *slog.Logger
	// EchoDelay is the builtin echo's pause before each word, so that
	// streaming shows in a demo. Default 0.
	EchoDelay time.Duration
	// ToolCalls bounds the calls an llm agent makes of its tool servers'
	// tools in one turn. Default 8.
	ToolCalls int
	// ToolResultBytes bounds one tool result the model reads (more is
	// cut, with a note saying so). Default 16 KiB.
	ToolResultBytes int
	// ToolCallTimeout bounds one tool call; ToolTurnTimeout all of a
	// turn's tool calls (then the model must answer). Defaults 20s, 45s.
	ToolCallTimeout time.Duration
	ToolTurnTimeout time.Duration
	// Conformance lets the builtin conformance agent answer (the A2A
	// conformance kit's system under test, builtin_conformance.go); off,
	// it is no agent at all.
	Conformance bool
	// Now is the clock a probe's latency is measured on, so a test can
	// say how long a backend took instead of depending on the machine's
	// speed. Default time.Now.
	Now func() time.Time
	// ApprovalTTL is how long a tool call waits for the sender's
	// approval (approval.go); ApprovalsPerAgent and Approvals bound the
	// calls waiting for one agent and in all. Defaults 15 min, 8, 128.
	ApprovalTTL       time.Duration
	ApprovalsPerAgent int
	Approvals         int
	// Models, if set, shares each model endpoint among the completion
	// requests of llm agents (docs/architecture.md, "Model scheduler");
	// nil: every request goes at once.
	Models *modelsched.Scheduler
	// HistoryTokens is the budget of an llm agent's history in tokens of
	// ~4 bytes (--llm-history-tokens; an agent's backend may set its
	// own): past it the oldest turns are folded into a summary
	// (history.go). Default DefaultHistoryTokens.
	HistoryTokens int
	// SummaryCache bounds the conversations whose summaries are kept.
	// Default DefaultSummaryCache.
	SummaryCache int
}

// policy is what the backends may reach.
func (o RuntimeOptions) policy() Policy { return Policy{Private: o.AllowPrivate, Allow: o.Allow} }

// Defaults of RuntimeOptions.
const (
	DefaultTurnTimeout   = 60 * time.Second
	DefaultMaxReplyBytes = 64 << 10
	DefaultUserAgent     = "AgentSite"
)

// Runtime answers turns for this node's own agents with their backends.
// It is safe for concurrent use; Close releases its MCP clients.
type Runtime struct {
	// Delegator lets delegate agents call other agents; set it before
	// serving (the chat use case, which itself answers local turns through
	// this Runtime).
	Delegator Delegator
	// Memory keeps the facts llm agents with memory remember of people
	// (memory.go); set it before serving. nil: no agent has memory.
	Memory Memory

	lookup func(ctx context.Context, agentID string) (agent.Backend, error)
	opts   RuntimeOptions
	log    *slog.Logger
	client *http.Client // the guarded client: every outbound call
	mcp    *mcpClients
	a2a    *a2aState
	// approvals are the tool calls waiting for a sender's yes or no.
	approvals *approvals
	// summaries are the conversations' folded turns (history.go).
	summaries *lru.Cache[string, foldEntry]
}

// NewRuntime returns a Runtime that finds an agent's backend with lookup.
// lookup must return an error wrapping ErrUnknownAgent when the agent is
// not hosted here (map the store's not-found to it); other errors are
// reported as internal.
func NewRuntime(lookup func(ctx context.Context, agentID string) (agent.Backend, error), opts RuntimeOptions) *Runtime {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTurnTimeout
	}
	if opts.MaxReplyBytes <= 0 {
		opts.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ToolCalls <= 0 {
		opts.ToolCalls = DefaultToolCalls
	}
	if opts.ToolResultBytes <= 0 {
		opts.ToolResultBytes = DefaultToolResultBytes
	}
	if opts.ToolCallTimeout <= 0 {
		opts.ToolCallTimeout = DefaultToolCallTimeout
	}
	if opts.ToolTurnTimeout <= 0 {
		opts.ToolTurnTimeout = DefaultToolTurnTimeout
	}
	if opts.ApprovalTTL <= 0 {
		opts.ApprovalTTL = DefaultApprovalTTL
	}
	if opts.ApprovalsPerAgent <= 0 {
		opts.ApprovalsPerAgent = DefaultApprovalsPerAgent
	}
	if opts.Approvals <= 0 {
		opts.Approvals = DefaultApprovals
	}
	if opts.HistoryTokens <= 0 {
		opts.HistoryTokens = DefaultHistoryTokens
	}
	if opts.SummaryCache <= 0 {
		opts.SummaryCache = DefaultSummaryCache
	}
	client := NewGuardedClientWithOptions(GuardOptions{Policy: opts.policy(), Timeout: opts.Timeout})
	return &Runtime{
		lookup: lookup,
		opts:   opts,
		log:    opts.Logger,
		client: client,
		mcp:    newMCPClients(client, opts),
		a2a:    newA2AState(),

		approvals: newApprovals(opts),
		summaries: newSummaryCache(opts.SummaryCache),
	}
}

// Close ends the cached MCP sessions. Answer must not be called after.
func (r *Runtime) Close() error { return r.mcp.pool.Close() }

// Answer runs one turn: it streams partial text through emit (each call a
// chunk, in order) and returns the full reply. On failure the text emitted
// so far is returned with the error, which is classified by the Err*
// kinds; an error from emit itself is returned as is (wrapped).
func (r *Runtime) Answer(ctx context.Context, t agent.Turn, emit func(chunk string) error) (string, error) {
	b, err := r.lookup(ctx, t.AgentID)
	if err != nil {
		if errors.Is(err, agent.ErrUnknownAgent) {
			return "", fmt.Errorf("agent %s: %w", t.AgentID, err)
		}
		return "", fmt.Errorf("agent %s: look up backend: %w", t.AgentID, err)
	}
	switch reads := readsHistory(b); {
	case t.HistoryOmitted && reads:
		return "", fmt.Errorf("agent %s: %w", t.AgentID, agent.ErrHistoryRequired)
	case !reads && t.OnHistoryUnread != nil:
		t.OnHistoryUnread()
	}
	tctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	out := func(chunk string) error {
		if chunk == "" || emit == nil {
			return nil
		}
		if err := emit(chunk); err != nil {
			return &emitError{err}
		}
		return nil
	}
	var reply string
	switch b.Kind {
	case agent.BackendBuiltin:
		reply, err = r.answerBuiltin(tctx, b, t, out)
	case agent.BackendLLM:
		reply, err = r.answerLLM(tctx, b, t, out)
	case agent.BackendMCP:
		reply, err = r.answerMCP(tctx, b, t, out)
	case agent.BackendWebhook:
		reply, err = r.answerWebhook(tctx, b, t, out)
	case agent.BackendA2A:
		reply, err = r.answerA2A(tctx, b, t, out)
	case agent.BackendCatalogue:
		return "", fmt.Errorf("%w: not hosted: this is a catalogue listing of a server you run yourself (its page gives the install line); no node answers for it", agent.ErrUnknownAgent)
	default:
		err = fmt.Errorf("%w: backend kind %q is not supported", agent.ErrUnknownAgent, b.Kind)
	}
	if _, paused := agent.InputPrompt(err); paused || errors.Is(err, agent.ErrUnknownApproval) {
		return reply, err // not a failure: the agent waits for the next message, or for a fresh request
	}
	if err != nil {
		err = redact(r.classify(ctx, tctx, b, err), b.APIKey)
		var be *BackendError
		if errors.As(err, &be) {
			be.Owner = ownerText(b, be, 0)
		}
		r.logFailure(ctx, t, b, err)
	}
	return reply, err
}

// classify maps whatever a backend returned to one of the Err* kinds.
func (r *Runtime) classify(parent, turn context.Context, b agent.Backend, err error) error {
	var ee *emitError
	if errors.As(err, &ee) {
		return fmt.Errorf("agent %s: %w", b.Kind, ee.err)
	}
	if errors.Is(err, agent.ErrUnknownAgent) {
		return err
	}
	var be *BackendError
	isBE := errors.As(err, &be)
	// Definite answers from the backend stand, whatever happened after.
	if isBE && (be.Kind == agent.ErrBackendRejected || be.Kind == agent.ErrReplyTooLarge || be.Kind == agent.ErrBadBackendReply || be.Kind == agent.ErrBlockedAddress) {
		return be
	}
	switch {
	case errors.Is(parent.Err(), context.Canceled):
		return fmt.Errorf("agent %s backend: %w", b.Kind, parent.Err())
	case turn.Err() != nil || isNetTimeout(err) || errors.Is(err, agent.ErrBackendTimeout):
		public := fmt.Sprintf("no reply within %s", r.opts.Timeout)
		if parent.Err() != nil {
			public = "no reply in time" // the caller's deadline, not ours
		}
		return &BackendError{Kind: agent.ErrBackendTimeout, Backend: b.Kind, Public: public}
	case errors.Is(err, errBadBackendURL):
		return &BackendError{Kind: agent.ErrBlockedAddress, Backend: b.Kind, Public: "the backend URL is not usable", Err: err}
	case errors.Is(err, agent.ErrBlockedAddress):
		return &BackendError{Kind: agent.ErrBlockedAddress, Backend: b.Kind, Public: "the backend address is not a public one", Err: err}
	case errors.Is(err, agent.ErrReplyTooLarge):
		return &BackendError{Kind: agent.ErrReplyTooLarge, Backend: b.Kind, Public: "the reply exceeds " + sizeText(r.opts.MaxReplyBytes), Err: err}
	case errors.Is(err, agent.ErrBadBackendReply):
		return &BackendError{Kind: agent.ErrBadBackendReply, Backend: b.Kind, Public: "the backend's reply could not be read", Err: err}
	case isBE:
		return be
	}
	return &BackendError{Kind: agent.ErrBackendUnavailable, Backend: b.Kind, Public: "the backend could not be reached", Err: err}
}

// logFailure logs a failed turn without secrets: the URL's host only, and
// the error (already redacted).
func (r *Runtime) logFailure(ctx context.Context, t agent.Turn, b agent.Backend, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	level := slog.LevelWarn
	if errors.Is(err, agent.ErrBackendRejected) || errors.Is(err, agent.ErrUnknownAgent) {
		level = slog.LevelInfo
	}
	host := ""
	if u, perr := url.Parse(b.URL); perr == nil {
		host = u.Host
	}
	r.log.LogAttrs(ctx, level, "agent backend failed",
		slog.String("agent", t.AgentID),
		slog.String("conversation", t.ConversationID),
		slog.String("backend", b.Kind),
		slog.String("host", host),
		slog.String("err", err.Error()))
}

// tooLarge reports a reply over the limit.
func (r *Runtime) tooLarge(backend string) *BackendError {
	return kindError(agent.ErrReplyTooLarge, backend, "the reply exceeds "+sizeText(r.opts.MaxReplyBytes))
}

// sizeText writes a byte limit for people.
func sizeText(n int) string {
	if n >= 1<<10 && n%(1<<10) == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
