package apiwire

import (
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Conversation is GET /api/v1/conversations/{id}: the conversation and
// its newest messages, oldest first.
type Conversation struct {
	ID        string    `json:"id"`
	AgentID   string    `json:"agent_id"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Messages  []Message `json:"messages"`
}

// Message is one message of a Conversation. Role is user, agent, error or
// step; a step (one delegation of an agent that calls agents) comes as
// Step with an empty Text, so clients need not parse stored JSON. A step
// the node cannot read keeps its Text and has no Step.
type Message struct {
	ID        int64       `json:"id"`
	Role      string      `json:"role"`
	Text      string      `json:"text"`
	Step      *agent.Step `json:"step,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
}

// FromConversation is the API view of a conversation and its messages.
func FromConversation(c store.Conversation, ms []store.Message) Conversation {
	out := Conversation{ID: c.ID, AgentID: c.AgentID, Title: c.Title, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
		Messages: make([]Message, 0, len(ms))}
	for _, m := range ms {
		wm := Message{ID: m.ID, Role: m.Role, Text: m.Text, CreatedAt: m.CreatedAt}
		if m.Role == agent.RoleStep {
			if s, ok := agent.ParseStep(m.Text); ok {
				wm.Text, wm.Step = "", &s
			}
		}
		out.Messages = append(out.Messages, wm)
	}
	return out
}
