package chat

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// Searcher finds agents for a sentence (discover.Discover.Find: its
// words together, then one by one), for find_agents.
type Searcher interface {
	Find(ctx context.Context, text, tag string, n int) ([]store.Listing, error)
}

var _ runtime.Delegator = (*Chat)(nil)

// FindAgents searches the catalogue for a delegating agent, as every
// surface's sentence search (Searcher).
func (c *Chat) FindAgents(ctx context.Context, query, tag string) ([]runtime.FoundAgent, error) {
	if c.Search == nil {
		return nil, ErrUnavailable
	}
	found, err := c.Search.Find(ctx, query, tag, 0)
	if err != nil {
		return nil, err
	}
	var out []runtime.FoundAgent
	for _, l := range found {
		out = append(out, runtime.FoundAgent{
			ID: l.Record.ID, Name: l.Record.DisplayName, Description: firstLine(l.Record.Description, 200),
			Tags: l.Record.Tags, Host: c.hostLabel(ctx, l), Status: l.Status,
		})
	}
	return out, nil
}

// AskAgent runs one turn of a delegated message with agent agentID: no
// conversation is kept for it (the steps are kept in the asking one), the
// trace travels with it, and it is routed like any turn.
func (c *Chat) AskAgent(ctx context.Context, trace agent.Trace, agentID, text string) (string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", ErrEmptyMessage
	case len(text) > MaxMessageBytes:
		return "", ErrMessageTooLarge
	}
	l, err := c.Agent(ctx, agentID)
	if err != nil {
		return "", err
	}
	if l.Status == store.StatusOffline && !l.Local {
		return "", ErrAgentOffline
	}
	turn := agent.Turn{AgentID: l.Record.ID, Text: text, Owner: l.Record.Owner, Trace: trace}
	var reply string
	switch {
	case l.Local && c.Local != nil:
		reply, err = c.local().Answer(ctx, turn, nil)
	case !l.Local && c.Remote != nil:
		reply, err = c.Remote.Send(ctx, l.HostPeerID, turn, nil)
	default:
		return "", ErrUnavailable
	}
	if err != nil {
		return reply, TurnError(err, l)
	}
	return reply, nil
}

// Describe names an agent for the steps people see.
func (c *Chat) Describe(ctx context.Context, agentID string) (name, host string) {
	l, err := c.Listings.Find(ctx, agentID)
	if err != nil {
		return "", ""
	}
	return l.Record.DisplayName, c.hostLabel(ctx, l)
}

// HostLabeler names the node hosting a listing for people.
type HostLabeler interface {
	HostLabel(ctx context.Context, l store.Listing) string
}

// hostLabel is the name the steps give the node hosting l.
func (c *Chat) hostLabel(ctx context.Context, l store.Listing) string {
	if c.Hosts != nil {
		return c.Hosts.HostLabel(ctx, l)
	}
	return HostName(l)
}

// HostName is the short name people see for the node hosting l ("this node",
// "node a1b2c3"), the one rule the chat steps and the portal share.
func HostName(l store.Listing) string {
	if l.Local {
		return "this node"
	}
	if id := l.HostPeerID; len(id) > 8 {
		return "node " + id[len(id)-6:]
	}
	return "node " + l.HostPeerID
}

func firstLine(s string, max int) string {
	s, _, _ = strings.Cut(s, "\n")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

// stepRecorder keeps a turn's finished steps in its conversation and
// passes every step on to the surface (onStep may be nil).
func (c *Chat) stepRecorder(ctx context.Context, convID string, onStep func(agent.Step)) func(agent.Step) {
	return func(s agent.Step) {
		if s.Done {
			b, _ := json.Marshal(s)
			if _, err := c.Store.AppendMessage(ctx, store.Message{ConversationID: convID, Role: agent.RoleStep, Text: string(b), CreatedAt: c.now()}); err != nil {
				c.logger().Warn("storing a delegation step failed", "conversation", convID, "err", err)
			}
		}
		if onStep != nil {
			onStep(s)
		}
	}
}
