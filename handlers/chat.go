package handlers

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Answerer answers turns for this node's own agents (agent.Runtime).
type Answerer interface {
	Answer(ctx context.Context, t agent.Turn, emit func(chunk string) error) (string, error)
}

// RemoteAgents sends a turn to the node hosting an agent (MCP over libp2p)
// and streams the reply back.
type RemoteAgents interface {
	Send(ctx context.Context, hostPeerID string, t agent.Turn, emit func(chunk string) error) (string, error)
}

// Chat limits.
const (
	maxMessageBytes = 8 << 10
	historyTurns    = 40 // earlier messages sent to the backend
	maxTitleRunes   = 60
)

// TurnRequest is one message from a person (browser, API, MCP client) to an
// agent anywhere on the planet.
type TurnRequest struct {
	AgentID        string
	ConversationID string // empty: start a new conversation
	Text           string
}

// TurnResult is what a completed turn produced.
type TurnResult struct {
	Conversation store.Conversation
	Reply        store.Message
}

// Turn runs one chat turn for owner (a conversation owner key: "user:<id>",
// "anon:<token>" or "mcp:<session>"): it stores the user's message, routes
// the turn to the hosting node (this one or a peer), streams the reply
// through emit and stores it. A failure is stored as an error message, so
// the conversation keeps what was said and shows what went wrong.
func (s *Server) Turn(ctx context.Context, owner string, req TurnRequest, emit func(string) error) (TurnResult, error) {
	text := strings.TrimSpace(req.Text)
	switch {
	case text == "":
		return TurnResult{}, &Error{Status: http.StatusBadRequest, Code: "empty_message", Message: "Write a message first.", Fields: map[string]string{"text": "is required"}}
	case len(text) > maxMessageBytes:
		return TurnResult{}, &Error{Status: http.StatusRequestEntityTooLarge, Code: "message_too_large", Message: fmt.Sprintf("Messages are limited to %d KiB.", maxMessageBytes>>10), Fields: map[string]string{"text": "too long"}}
	case !utf8.ValidString(text):
		return TurnResult{}, &Error{Status: http.StatusBadRequest, Code: "bad_message", Message: "The message is not valid UTF-8.", Fields: map[string]string{"text": "invalid UTF-8"}}
	}
	l, err := s.chatTarget(ctx, req.AgentID)
	if err != nil {
		return TurnResult{}, err
	}
	conv, err := s.conversationFor(ctx, owner, l, req.ConversationID, text)
	if err != nil {
		return TurnResult{}, err
	}
	past, err := s.Store.ListMessages(ctx, conv.ID, historyTurns)
	if err != nil {
		return TurnResult{}, fmt.Errorf("load history: %w", err)
	}
	if _, err := s.Store.AppendMessage(ctx, store.Message{ConversationID: conv.ID, Role: "user", Text: text, CreatedAt: s.now()}); err != nil {
		return TurnResult{}, fmt.Errorf("store message: %w", err)
	}
	turn := agent.Turn{AgentID: l.Record.ID, ConversationID: conv.ID, History: toHistory(past), Text: text, Owner: conv.AgentOwner}
	if (l.Local && s.Answerer == nil) || (!l.Local && s.Remote == nil) {
		return TurnResult{}, &Error{Status: http.StatusServiceUnavailable, Code: "chat_unavailable", Message: "Chat is not available on this node."}
	}
	var reply string
	if l.Local {
		reply, err = s.Answerer.Answer(ctx, turn, emit)
	} else {
		reply, err = s.Remote.Send(ctx, l.HostPeerID, turn, emit)
	}
	if err != nil {
		e := turnError(err, l)
		// Stored on a fresh context: the request's may be what ended. What
		// the agent said before failing is kept, then the error.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if strings.TrimSpace(reply) != "" {
			if _, serr := s.Store.AppendMessage(sctx, store.Message{ConversationID: conv.ID, Role: "agent", Text: reply, CreatedAt: s.now()}); serr != nil {
				s.Logger.Warn("storing a partial reply failed", "conversation", conv.ID, "err", serr)
			}
		}
		if _, serr := s.Store.AppendMessage(sctx, store.Message{ConversationID: conv.ID, Role: "error", Text: e.Message, CreatedAt: s.now()}); serr != nil {
			s.Logger.Warn("storing a chat error failed", "conversation", conv.ID, "err", serr)
		}
		return TurnResult{Conversation: conv}, e
	}
	m, err := s.Store.AppendMessage(ctx, store.Message{ConversationID: conv.ID, Role: "agent", Text: reply, CreatedAt: s.now()})
	if err != nil {
		return TurnResult{Conversation: conv}, fmt.Errorf("store reply: %w", err)
	}
	return TurnResult{Conversation: conv, Reply: m}, nil
}

// chatTarget finds the listing a turn goes to (looking beyond the cache if
// needed) and refuses deleted or offline agents with a clear message.
func (s *Server) chatTarget(ctx context.Context, id string) (store.Listing, error) {
	l, err := s.loadListing(ctx, id)
	if errors.Is(err, errNoSuchAgent) || errors.Is(err, errAgentGone) {
		return store.Listing{}, &Error{Status: http.StatusNotFound, Code: "unknown_agent", Message: "No agent has this id; find one at /agents."}
	}
	if err != nil {
		return store.Listing{}, err
	}
	if l.Status == store.StatusOffline && !l.Local {
		return store.Listing{}, &Error{Status: http.StatusServiceUnavailable, Code: "agent_offline", Message: "This agent is offline: its node has not been heard from. Try again later."}
	}
	return l, nil
}

// errAgentChangedOwner refuses a turn in a conversation whose agent is no
// longer the one it started with: the history must not reach a new owner.
var errAgentChangedOwner = &Error{Status: http.StatusConflict, Code: "agent_changed_owner", Message: "This agent now belongs to someone else; start a new conversation."}

// conversationFor loads conversation id of owner with l, or starts one
// bound to l's owner and publisher when id is empty. An agent id is derived
// from its publisher's key and name only, so the same id may later carry
// another party's agent (a name deleted and registered again): such a
// conversation is refused, before any of its history is sent.
func (s *Server) conversationFor(ctx context.Context, owner string, l store.Listing, id, firstText string) (store.Conversation, error) {
	if id != "" {
		c, err := s.Store.GetConversation(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && (c.OwnerKey != owner || c.AgentID != l.Record.ID)):
			// Someone else's conversation looks exactly like a missing one.
			return store.Conversation{}, &Error{Status: http.StatusNotFound, Code: "unknown_conversation", Message: "No such conversation; start a new one."}
		case err != nil:
			return store.Conversation{}, err
		case c.AgentOwner != l.Record.Owner || c.AgentPublisher != l.Record.Publisher:
			return store.Conversation{}, errAgentChangedOwner
		}
		return c, nil
	}
	cid, err := newConversationID()
	if err != nil {
		return store.Conversation{}, err
	}
	now := s.now()
	c, err := s.Store.CreateConversation(ctx, store.Conversation{
		ID: cid, AgentID: l.Record.ID, OwnerKey: owner, AgentOwner: l.Record.Owner, AgentPublisher: l.Record.Publisher,
		Title: title(l.Record.DisplayName, firstText), CreatedAt: now, UpdatedAt: now,
	})
	if err != nil {
		return store.Conversation{}, fmt.Errorf("create conversation: %w", err)
	}
	return c, nil
}

var convIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func newConversationID() (string, error) {
	b := make([]byte, 15)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random conversation id: %w", err)
	}
	return "c" + strings.ToLower(convIDEncoding.EncodeToString(b)), nil
}

// title is the conversation's label in the side list: its first words.
func title(agentName, text string) string {
	t := strings.Join(strings.Fields(text), " ")
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
		if m.Role == "user" || m.Role == "agent" {
			out = append(out, agent.ChatMessage{Role: m.Role, Text: m.Text})
		}
	}
	return out
}

// turnError turns a backend or routing failure into a message a person can
// act on; internal details stay in the log.
func turnError(err error, l store.Listing) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, agent.ErrOwnerChanged):
		return errAgentChangedOwner
	case errors.Is(err, agent.ErrUnknownAgent):
		return &Error{Status: http.StatusNotFound, Code: "unknown_agent", Message: "This agent is not hosted here any more."}
	case errors.Is(err, agent.ErrBackendTimeout), errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: http.StatusGatewayTimeout, Code: "agent_timeout", Message: "The agent took too long to answer. Try again, or try a shorter message."}
	case errors.Is(err, agent.ErrBackendRejected):
		return &Error{Status: http.StatusBadGateway, Code: "agent_rejected", Message: "The agent's backend refused the request: " + safeDetail(err)}
	case errors.Is(err, agent.ErrBlockedAddress):
		return &Error{Status: http.StatusBadGateway, Code: "agent_misconfigured", Message: "The agent's backend address is not allowed on this node."}
	case errors.Is(err, agent.ErrBackendUnavailable):
		return &Error{Status: http.StatusBadGateway, Code: "agent_unavailable", Message: "The agent could not answer right now. Try again later."}
	case errors.Is(err, agent.ErrReplyTooLarge), errors.Is(err, agent.ErrBadBackendReply):
		return &Error{Status: http.StatusBadGateway, Code: "agent_bad_reply", Message: "The agent's backend sent a reply that could not be used."}
	case errors.Is(err, agent.ErrAgentBusy):
		return &Error{Status: http.StatusServiceUnavailable, Code: "agent_busy", Message: "The node hosting this agent is busy; try again in a minute."}
	case errors.Is(err, context.Canceled):
		return &Error{Status: statusClientClosed, Code: "canceled", Message: "The message was canceled."}
	}
	if !l.Local {
		return &Error{Status: http.StatusBadGateway, Code: "host_unreachable", Message: "The node hosting this agent could not be reached. It may be offline; try again later."}
	}
	return &Error{Status: http.StatusBadGateway, Code: "agent_unavailable", Message: "The agent could not answer right now. Try again later."}
}

// safeDetail is the last part of a backend error, which the runtime keeps
// free of secrets, bounded for display.
func safeDetail(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
