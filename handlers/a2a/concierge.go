package a2a

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Limits of a concierge search.
const (
	maxFound      = 5   // agents in one answer
	maxQueryRunes = 200 // of the text searched for
)

// FoundAgent is one agent in a concierge answer (its data part).
type FoundAgent struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Status      string `json:"status"`
	// Health is what the agent's host last said of how it answers
	// (agent.Health* states); failing ones come only when nothing else
	// matches.
	Health  string `json:"health"`
	CardURL string `json:"cardUrl"`
}

// findAgents answers a concierge message with the agents that match its
// text, as a completed task whose reply artifact holds the list as text
// for people and as a data part for programs: generic clients read, list
// and continue it as any other task.
func (s *Server) findAgents(w http.ResponseWriter, r *http.Request, c *call, who caller, in *a2a.Message, text string) {
	q := strings.Join(strings.Fields(text), " ")
	if q == "" {
		c.fail(w, invalidParams(`Say what you are looking for, e.g. "weather"; `+
			`or set metadata "agent_id" to talk to one agent.`))
		return
	}
	if utf8.RuneCountInString(q) > maxQueryRunes {
		q = string([]rune(q)[:maxQueryRunes])
	}
	found, err := s.search(r.Context(), q)
	found = preferHealthy(found)
	if err != nil {
		re, e := rpcError(err)
		s.logFailure(r.Context(), "A2A agent search failed", e, err)
		c.fail(w, re)
		return
	}
	base := s.base(r)
	agents := make([]FoundAgent, 0, len(found))
	for _, l := range found {
		agents = append(agents, FoundAgent{ID: l.Record.ID, Name: l.Record.DisplayName, Description: l.Record.Description,
			Status: l.Status, Health: healthState(l.Health), CardURL: base + "/a2a/" + l.Record.ID + "/agent-card.json"})
	}
	contextID := in.ContextID
	if contextID == "" || len(contextID) > 128 {
		contextID = newID()
	}
	t := newTask("", who.owner, "", contextID, in, s.now())
	if err := s.tasks.add(t, s.now()); err != nil {
		c.failHTTP(w, errBusy)
		return
	}
	t.mu.Lock()
	t.data = map[string]any{"agents": agents}
	t.mu.Unlock()
	t.complete(foundText(q, agents, base), s.now())
	close(t.done)
	s.tasks.ended()
	c.ok(w, t.snapshot(nil))
}

// search finds up to maxFound agents for q (all its words, then its
// words one by one: discover's sentence search).
func (s *Server) search(ctx context.Context, q string) ([]store.Listing, error) {
	return s.Catalog.Find(ctx, q, "", maxFound)
}

// preferHealthy leaves failing agents out of an answer when any other
// agent matches, and lists them last otherwise: a caller should be sent
// to an agent that answers. The catalogue already ranks failing agents
// last within one search; the word-by-word fallback merges several.
func preferHealthy(found []store.Listing) []store.Listing {
	ok := make([]store.Listing, 0, len(found))
	for _, l := range found {
		if l.Health.State != agent.HealthFailing {
			ok = append(ok, l)
		}
	}
	if len(ok) == 0 {
		return found
	}
	return ok
}

// healthState is the health word of an answer; a host that said nothing
// yet reads as unknown.
func healthState(h agent.Health) string {
	if !agent.IsHealthState(h.State) {
		return agent.HealthUnknown
	}
	return h.State
}

func foundText(q string, agents []FoundAgent, base string) string {
	if len(agents) == 0 {
		return fmt.Sprintf("No agent matches %q. Try other words, or browse %s/agents.", q, base)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Agents for %q:\n", q)
	for i, a := range agents {
		fmt.Fprintf(&b, "%d. %s (id %s, %s, %s): %s\n", i+1, a.Name, a.ID, a.Status, healthWords(a.Health), a.CardURL)
	}
	b.WriteString(`Talk to one at its card's url, or send your message here with metadata {"agent_id": "<id>"}.`)
	return b.String()
}

// healthWords say an agent's health in the text answer.
func healthWords(state string) string {
	switch state {
	case agent.HealthUnknown:
		return "health not checked yet"
	case agent.HealthFailing:
		return "failing: it may not answer"
	}
	return state
}
