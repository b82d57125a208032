// Package chat is the use case of one chat turn, for every surface (the
// WebSocket, the no-JS form, the message API, MCP, and agents that call
// agents): who owns a conversation, storing what was said, and routing the
// turn to this node's runtime or to the node hosting the agent. It speaks
// no protocol; its errors are agent.Errors each surface maps once.
package chat

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/mdtext"
	"github.com/agentsite/agentsite/store"
)

// Answerer answers turns for this node's own agents (runtime.Runtime).
type Answerer interface {
	Answer(ctx context.Context, t agent.Turn, emit func(chunk string) error) (string, error)
}

// Remote sends a turn to the node hosting an agent (MCP over libp2p) and
// streams the reply back.
type Remote interface {
	Send(ctx context.Context, hostPeerID string, t agent.Turn, emit func(chunk string) error) (string, error)
}

// Listings finds an agent's listing by id, beyond the cache if need be
// (registry.Registry.Find).
type Listings interface {
	Find(ctx context.Context, id string) (store.Listing, error)
}

// Store keeps conversations and their messages.
type Store interface {
	GetConversation(ctx context.Context, id string) (store.Conversation, error)
	CreateConversation(ctx context.Context, c store.Conversation) (store.Conversation, error)
	StartConversation(ctx context.Context, c store.Conversation, first *store.Message) (store.Conversation, *store.Message, error)
	ListMessages(ctx context.Context, conversationID string, limit int) ([]store.Message, error)
	AppendMessage(ctx context.Context, m store.Message) (store.Message, error)
	DeleteMessagesFrom(ctx context.Context, conversationID string, fromID int64) error
	RenameConversation(ctx context.Context, id, title string) (store.Conversation, error)
	DeleteConversation(ctx context.Context, id string) error
	ShareConversation(ctx context.Context, id string, tokenHash []byte, at time.Time) error
	UnshareConversation(ctx context.Context, id string) error
	SharedConversation(ctx context.Context, tokenHash []byte) (store.Conversation, error)
	ConversationShared(ctx context.Context, id string) (bool, error)
}

// Limits of a turn.
const (
	MaxMessageBytes = agent.MaxMessageBytes
	historyTurns    = 40 // earlier messages sent to the backend
	maxTitleRunes   = 60
	// MaxConversationIDLen bounds what may be a conversation id (ours
	// are 25 characters).
	MaxConversationIDLen = 64
)

// Chat runs turns. Set Store, Listings and Local before use; Remote may be
// nil on a node without a network (remote agents then refuse chat).
type Chat struct {
	Store    Store
	Listings Listings
	Local    Answerer
	Remote   Remote
	// Search serves find_agents for agents that call agents; nil: they
	// cannot search.
	Search Searcher
	// Outcomes, if set, hears how each local turn went (agent health).
	Outcomes Outcomes
	// Hosts names the node hosting a listing for the steps people see
	// ("node-b", store.NodeLabels); nil: HostName.
	Hosts HostLabeler
	// Users names the accounts that own conversations, so that a failed
	// turn shows the agent's own owner what its backend said (owners.go);
	// nil: only the operator is shown.
	Users  UserNamer
	Logger *slog.Logger
	Now    func() time.Time
}

// Owner is a conversation owner key: whose conversations these are.
type Owner string

// Owners of conversations, one constructor per kind of caller.
const (
	// OperatorOwner owns the operator token's conversations (API).
	OperatorOwner Owner = "operator"
	// APIAnonymous owns anonymous API turns: the conversation id itself is
	// the capability to continue one.
	APIAnonymous Owner = "api:anonymous"
	// MCPAnonymous owns the turns of MCP clients without a session.
	MCPAnonymous Owner = "mcp:anonymous"
	// A2AAnonymous owns the turns of A2A clients, which carry no
	// credentials: the contextId (the conversation id) itself is the
	// capability to continue one, as with APIAnonymous.
	A2AAnonymous Owner = "a2a:anonymous"
)

// UserOwner owns a portal account's conversations.
func UserOwner(userID int64) Owner { return Owner("user:" + strconv.FormatInt(userID, 10)) }

// UserID is the portal account of a UserOwner; false for any other
// owner.
func (o Owner) UserID() (int64, bool) {
	rest, ok := strings.CutPrefix(string(o), "user:")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0
}

// AnonOwner owns an anonymous browser's conversations, by the key kept in
// its session.
func AnonOwner(key string) Owner { return Owner("anon:" + key) }

// Anonymous reports whether o is an anonymous browser (AnonOwner).
func (o Owner) Anonymous() bool { return strings.HasPrefix(string(o), "anon:") }

// MCPOwner owns an MCP client session's conversations.
func MCPOwner(sessionID string) Owner { return Owner("mcp:" + sessionID) }

// Request is one message from a person (or an agent) to an agent anywhere
// on the planet.
type Request struct {
	AgentID        string
	ConversationID string // empty: start a new conversation
	Text           string
	// OnStep, if set, hears of each delegation the agent makes while it
	// answers (agent.Step, as it starts and as it ends). Finished steps
	// are stored in the conversation either way.
	OnStep func(agent.Step)
	// OnWait, if set, hears while the turn waits in its model's queue:
	// how many are ahead, and -1 once the model takes it (agent.Turn).
	OnWait func(ahead int)
	// Trace continues the trace of a message another agent passed on
	// (A2A metadata); zero for a person's message, which starts one.
	Trace agent.Trace
	// Quota, if set, is the sender's chat budget on this node (the one the
	// surface admitted the message with): every delegated turn of the
	// message's tree is charged to it too, those other nodes ran
	// included.
	Quota agent.Quota
	// OnStarted, if set, hears the conversation once the message is
	// stored, before the agent is asked: a surface can show a new
	// conversation at once.
	OnStarted func(store.Conversation)
	// ReplaceLast makes the turn replace the conversation's last exchange
	// (its last message from the person and all that followed): Text is
	// the edited message, or empty to send that message again (retry).
	// ConversationID is required.
	ReplaceLast bool
	// MessageID is the id the sender gave its message (A2A's messageId).
	MessageID string
	// Yield, if set, takes what the agent makes besides its reply text
	// (agent.Turn.Yield); only the text is stored.
	Yield func(agent.Output)
	// Approval answers a tool call the agent asked to approve
	// (Result.Approval); Text is stored as the person's message.
	Approval *agent.ApprovalAnswer
	// NoApprovals, if set, says why no person can approve a tool call
	// from this surface: such calls are refused (agent.Turn.NoApprovals).
	NoApprovals string
}

// Result is what a turn produced. Conversation is set once the message is
// stored (also when the turn then failed: the failure is stored with it).
type Result struct {
	Conversation store.Conversation
	Reply        store.Message
	// Sent reports whether the message reached the agent's runtime or
	// host (a failure after that was the agent's).
	Sent bool
	// NeedsInput is set when the agent ended the turn waiting for more
	// (agent.NeedsInput): it is the agent's prompt, stored as its reply.
	NeedsInput bool
	// Approval is set when what the agent waits for is a yes or no to
	// a tool call (agent.NeedsApproval): answer it with Request.Approval.
	Approval *agent.Approval
}

// Errors of a turn.
var (
	ErrEmptyMessage = agent.NewError(agent.KindInvalid, agent.CodeEmptyMessage, "Write a message first.").
			WithFields(map[string]string{"text": "is required"})
	ErrMessageTooLarge = agent.NewError(agent.KindTooLarge, agent.CodeMessageTooLarge,
		fmt.Sprintf("Messages are limited to %d KiB.", MaxMessageBytes>>10)).WithFields(map[string]string{"text": "too long"})
	ErrBadMessage = agent.NewError(agent.KindInvalid, agent.CodeBadMessage, "The message is not valid UTF-8.").
			WithFields(map[string]string{"text": "invalid UTF-8"})
	ErrUnknownAgent   = agent.ErrUnknownAgent.With("No agent has this id (or it was deleted); find one at /agents.")
	ErrNoConversation = agent.NewError(agent.KindNotFound, agent.CodeUnknownConv, "No such conversation; start a new one.")
	ErrAgentOffline   = agent.NewError(agent.KindUnavailable, agent.CodeAgentOffline, "This agent is offline: its node has not been heard from. Try again later.")
	ErrUnavailable    = agent.NewError(agent.KindUnavailable, agent.CodeChatUnavailable, "Chat is not available on this node.")
	ErrCanceled       = agent.NewError(agent.KindCanceled, agent.CodeCanceled, "The message was canceled.")
	// ErrStopped ends a turn the person stopped: it is the cause its
	// context was canceled with (Live.Stop), and what the conversation
	// keeps after the partial reply.
	ErrStopped = agent.NewError(agent.KindCanceled, agent.CodeStopped, "You stopped this reply.")
	// ErrReplyPending refuses a message to a conversation whose reply is
	// still on its way.
	ErrReplyPending = agent.NewError(agent.KindConflict, agent.CodeReplyPending, "A reply is still coming in this conversation; stop it first.")
	// ErrNothingToRetry refuses a retry or an edit in a conversation
	// without a message of the person's.
	ErrNothingToRetry = agent.NewError(agent.KindInvalid, agent.CodeNothingToRetry, "There is no message of yours to send again.")
)

func (c *Chat) now() time.Time {
	if c.Now == nil {
		return time.Now().UTC()
	}
	return c.Now().UTC()
}

func (c *Chat) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

// Turn runs one chat turn for owner: it stores the message, routes the turn
// to the hosting node (this one or a peer), streams the reply through emit
// and stores it. A failure after the message was stored is stored too, so
// the conversation keeps what was said and shows what went wrong.
func (c *Chat) Turn(ctx context.Context, owner Owner, req Request, emit func(string) error) (Result, error) {
	text, replaceFrom := req.Text, int64(0)
	if req.ReplaceLast {
		last, err := c.lastUserMessage(ctx, owner, req.AgentID, req.ConversationID)
		if err != nil {
			return Result{}, err
		}
		if strings.TrimSpace(text) == "" {
			text = last.Text
		}
		replaceFrom = last.ID
	}
	l, text, err := c.admit(ctx, req.AgentID, text)
	if err != nil {
		return Result{}, err
	}
	var (
		conv store.Conversation
		past []store.Message
	)
	if req.ConversationID == "" {
		// A new conversation is stored with its first message, in one
		// transaction; it has no history yet.
		if conv, err = c.newConversation(owner, l, text); err != nil {
			return Result{}, err
		}
		first := store.Message{Role: agent.RoleUser, Text: text, CreatedAt: conv.CreatedAt}
		if conv, _, err = c.Store.StartConversation(ctx, conv, &first); err != nil {
			return Result{}, fmt.Errorf("create conversation: %w", err)
		}
	} else {
		if conv, err = c.conversationFor(ctx, owner, l, req.ConversationID, text); err != nil {
			return Result{}, err
		}
		if replaceFrom != 0 {
			if err := c.Store.DeleteMessagesFrom(ctx, conv.ID, replaceFrom); err != nil {
				return Result{}, fmt.Errorf("replace the last exchange: %w", err)
			}
		}
		if past, err = c.Store.ListMessages(ctx, conv.ID, historyTurns); err != nil {
			return Result{}, fmt.Errorf("load history: %w", err)
		}
		if _, err := c.Store.AppendMessage(ctx, store.Message{ConversationID: conv.ID, Role: agent.RoleUser, Text: text, CreatedAt: c.now()}); err != nil {
			return Result{}, fmt.Errorf("store message: %w", err)
		}
	}
	if req.OnStarted != nil {
		req.OnStarted(conv)
	}
	turn := agent.Turn{AgentID: l.Record.ID, ConversationID: conv.ID, History: toHistory(past), Text: text, Owner: conv.AgentOwner,
		Trace: req.Trace, OnStep: c.stepRecorder(ctx, conv.ID, req.OnStep), OnWait: req.OnWait, MessageID: req.MessageID, Yield: req.Yield, Approval: req.Approval, NoApprovals: req.NoApprovals}
	if turn.Trace.ID == "" {
		turn.Trace = agent.NewTrace()
	}
	if req.Quota != nil {
		turn.Trace = turn.Trace.WithQuota(req.Quota)
	}
	// What streamed is kept, so a turn cut short (stopped, or a host gone
	// mid-reply) stores its partial reply even when the backend returns
	// none.
	var streamed strings.Builder
	collect := func(chunk string) error {
		streamed.WriteString(chunk)
		if emit == nil {
			return nil
		}
		return emit(chunk)
	}
	var reply string
	if l.Local {
		// Who waits in a shared model's queue, with the turns its agent
		// delegates: the caller the surface named (one anonymous client
		// among those sharing an owner), else the owner.
		if agent.CallerOf(ctx) == "" {
			ctx = agent.WithCaller(ctx, string(owner))
		}
		// The person an agent's memory is of: an account of this node,
		// only for its own agents (docs/agents.md, "Memory").
		turn.Person, _ = owner.UserID()
		reply, err = c.local().Answer(ctx, turn, collect)
	} else {
		reply, err = c.Remote.Send(ctx, l.HostPeerID, turn, collect)
	}
	prompt, paused := agent.InputPrompt(err)
	var approval *agent.Approval
	if a, ok := agent.PendingApproval(err); ok {
		approval = &a
	}
	if paused {
		reply, err = prompt, nil
	}
	if err != nil {
		e := TurnError(err, l)
		if c.ownerSees(ctx, owner, l) {
			e = forOwner(e, err)
		}
		stopped := errors.Is(context.Cause(ctx), ErrStopped)
		if stopped {
			e = ErrStopped.Wrap(err)
		}
		if stopped || strings.TrimSpace(reply) == "" {
			reply = streamed.String() // what the person saw
		}
		c.storeFailure(ctx, conv.ID, reply, e)
		return Result{Conversation: conv, Sent: delivered(e)}, e
	}
	m, err := c.Store.AppendMessage(ctx, store.Message{ConversationID: conv.ID, Role: agent.RoleAgent, Text: reply, CreatedAt: c.now()})
	if err != nil {
		return Result{Conversation: conv, Sent: true}, fmt.Errorf("store reply: %w", err)
	}
	return Result{Conversation: conv, Reply: m, Sent: true, NeedsInput: paused, Approval: approval}, nil
}

// lastUserMessage is the last message the person wrote in conversation
// id of owner with agentID: what a retry sends again and an edit
// replaces.
func (c *Chat) lastUserMessage(ctx context.Context, owner Owner, agentID, id string) (store.Message, error) {
	if id == "" {
		return store.Message{}, ErrNothingToRetry
	}
	conv, err := c.Conversation(ctx, owner, agentID, id)
	if err != nil {
		return store.Message{}, err
	}
	ms, err := c.Store.ListMessages(ctx, conv.ID, store.MaxMessages)
	if err != nil {
		return store.Message{}, fmt.Errorf("load messages: %w", err)
	}
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == agent.RoleUser {
			return ms[i], nil
		}
	}
	return store.Message{}, ErrNothingToRetry
}

// admit checks a message and the agent it is for: what a turn (or Open)
// refuses before anything is stored. It returns the listing and the
// trimmed text.
func (c *Chat) admit(ctx context.Context, agentID, text string) (store.Listing, string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return store.Listing{}, "", ErrEmptyMessage
	case len(text) > MaxMessageBytes:
		return store.Listing{}, "", ErrMessageTooLarge
	case !utf8.ValidString(text):
		return store.Listing{}, "", ErrBadMessage
	}
	l, err := c.Agent(ctx, agentID)
	if err != nil {
		return store.Listing{}, "", err
	}
	if l.Status == store.StatusOffline && !l.Local {
		return store.Listing{}, "", ErrAgentOffline
	}
	if (l.Local && c.Local == nil) || (!l.Local && c.Remote == nil) {
		return store.Listing{}, "", ErrUnavailable
	}
	return l, text, nil
}

// delivered reports whether a turn that failed with e reached the agent:
// not when the host could not be reached, or the runtime or the host
// refused the turn before running it.
func delivered(e *agent.Error) bool {
	switch e.Code {
	case agent.CodeHostUnreachable, agent.CodeAgentBusy, agent.CodeModelBusy, agent.CodeAgentMisconfigured,
		agent.CodeUnknownAgent, agent.CodeOwnerChanged:
		return false
	}
	return true
}

// storeFailure keeps what the agent said before failing, then the error,
// on a fresh context: the caller's may be what ended.
func (c *Chat) storeFailure(ctx context.Context, convID, partial string, e *agent.Error) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if strings.TrimSpace(partial) != "" {
		if _, err := c.Store.AppendMessage(sctx, store.Message{ConversationID: convID, Role: agent.RoleAgent, Text: partial, CreatedAt: c.now()}); err != nil {
			c.logger().Warn("storing a partial reply failed", "conversation", convID, "err", err)
		}
	}
	if _, err := c.Store.AppendMessage(sctx, store.Message{ConversationID: convID, Role: agent.RoleError, Text: e.Message, CreatedAt: c.now()}); err != nil {
		c.logger().Warn("storing a chat error failed", "conversation", convID, "err", err)
	}
}

// Agent is the listing a chat is with: ErrUnknownAgent for a malformed,
// unknown or deleted one. Offline agents are returned (their history stays
// readable); Turn refuses new messages to them.
func (c *Chat) Agent(ctx context.Context, id string) (store.Listing, error) {
	l, err := c.Listings.Find(ctx, id)
	if e := agent.AsError(err); e != nil && (e.Kind == agent.KindNotFound || e.Kind == agent.KindGone) {
		return store.Listing{}, ErrUnknownAgent
	}
	return l, err
}

// Conversation loads conversation id of owner with agent agentID. Someone
// else's conversation looks exactly like a missing one.
func (c *Chat) Conversation(ctx context.Context, owner Owner, agentID, id string) (store.Conversation, error) {
	conv, err := c.owned(ctx, owner, id)
	if err != nil {
		return store.Conversation{}, err
	}
	if conv.AgentID != agentID {
		return store.Conversation{}, ErrNoConversation
	}
	return conv, nil
}

// approvalKeeper is a Local Answerer that keeps tool calls waiting for
// approval (runtime.Runtime).
type approvalKeeper interface {
	WaitingApproval(ctx context.Context, agentID, conv string) (agent.Approval, bool)
}

// WaitingApproval is the tool call this node's agent agentID waits on in
// owner's conversation convID, for a page opened while it waits (the
// chat shows its Approve / Deny card again); ok is false when none waits
// or the agent is another node's (its turns never wait here).
func (c *Chat) WaitingApproval(ctx context.Context, owner Owner, agentID, convID string) (agent.Approval, bool) {
	k, ok := c.Local.(approvalKeeper)
	if !ok || convID == "" {
		return agent.Approval{}, false
	}
	if agent.CallerOf(ctx) == "" {
		ctx = agent.WithCaller(ctx, string(owner)) // as Turn names a local turn's caller
	}
	return k.WaitingApproval(ctx, agentID, convID)
}

// conversationFor loads conversation id of owner with l, or starts one
// bound to l's owner and publisher when id is empty. An agent id is derived
// from its publisher's key and name only, so the same id may later carry
// another party's agent (a name deleted and registered again): such a
// conversation is refused, before any of its history is sent.
func (c *Chat) conversationFor(ctx context.Context, owner Owner, l store.Listing, id, firstText string) (store.Conversation, error) {
	if id != "" {
		conv, err := c.Conversation(ctx, owner, l.Record.ID, id)
		if err != nil {
			return store.Conversation{}, err
		}
		if conv.AgentOwner != l.Record.Owner || conv.AgentPublisher != l.Record.Publisher {
			return store.Conversation{}, agent.ErrOwnerChanged
		}
		return conv, nil
	}
	conv, err := c.newConversation(owner, l, firstText)
	if err != nil {
		return store.Conversation{}, err
	}
	if conv, err = c.Store.CreateConversation(ctx, conv); err != nil {
		return store.Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	return conv, nil
}

// newConversation is a conversation of owner with l, not stored yet,
// bound to l's owner and publisher and titled after firstText.
func (c *Chat) newConversation(owner Owner, l store.Listing, firstText string) (store.Conversation, error) {
	cid, err := newConversationID()
	if err != nil {
		return store.Conversation{}, err
	}
	now := c.now()
	return store.Conversation{
		ID: cid, AgentID: l.Record.ID, OwnerKey: string(owner), AgentOwner: l.Record.Owner, AgentPublisher: l.Record.Publisher,
		Title: title(l.Record.DisplayName, firstText), CreatedAt: now, UpdatedAt: now,
	}, nil
}

var convIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func newConversationID() (string, error) {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random conversation id: %w", err)
	}
	return "c" + strings.ToLower(convIDEncoding.EncodeToString(b)), nil
}

// title is the conversation's label in the side list: its first words,
// as text (a first message in Markdown shows without its markup).
func title(agentName, text string) string {
	t := strings.Join(strings.Fields(mdtext.Plain(text)), " ")
	if r := []rune(t); len(r) > maxTitleRunes {
		t = string(r[:maxTitleRunes-1]) + "…"
	}
	if t == "" {
		return agentName
	}
	return t
}

func toHistory(ms []store.Message) []agent.ChatMessage {
	out := make([]agent.ChatMessage, 0, len(ms))
	for _, m := range ms {
		if m.Role == agent.RoleUser || m.Role == agent.RoleAgent {
			out = append(out, agent.ChatMessage{Role: m.Role, Text: m.Text})
		}
	}
	return out
}

// NewAnonKey is a fresh key for an anonymous browser's conversations (kept
// in its session): 120 random bits, like a conversation id.
func NewAnonKey() (string, error) { return newConversationID() }
