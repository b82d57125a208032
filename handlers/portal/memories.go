package portal

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// Memories is the part of the store that keeps what agents with memory
// remember of people (docs/agents.md, "Memory"): the account page lists
// and deletes a person's.
type Memories interface {
	ListMemories(ctx context.Context, userID int64, agentID string, limit int) ([]store.Memory, error)
	DeleteMemory(ctx context.Context, userID, id int64) error
	DeleteMemories(ctx context.Context, userID int64, agentID string) (int, error)
}

// errNoMemory answers for a fact id that is not the user's, or not a
// number: the same 404 either way, so ids cannot be probed.
var errNoMemory = httpkit.Errorf(http.StatusNotFound, string(agent.CodeNotFound), "No such remembered fact; it may be forgotten already.")

// accountMemories are userID's facts grouped per agent, the agent with
// the newest fact first, each named as the catalogue lists it.
func (p *Pages) accountMemories(ctx context.Context, userID int64) ([]web.MemoryGroup, error) {
	ms, err := p.Memories.ListMemories(ctx, userID, "", 0)
	if err != nil {
		return nil, err
	}
	var groups []web.MemoryGroup
	at := map[string]int{}
	for _, m := range ms {
		i, ok := at[m.AgentID]
		if !ok {
			i = len(groups)
			at[m.AgentID] = i
			g := web.MemoryGroup{AgentID: m.AgentID}
			if l, err := p.Catalog.GetAgent(ctx, m.AgentID); err == nil {
				g.AgentName = l.Record.DisplayName
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			groups = append(groups, g)
		}
		groups[i].Facts = append(groups[i].Facts, web.MemoryRow{ID: m.ID, Fact: m.Fact, CreatedAt: m.CreatedAt})
	}
	return groups, nil
}

// SubmitDeleteMemory forgets one of the user's remembered facts; another
// user's fact id is a 404.
func (p *Pages) SubmitDeleteMemory(w http.ResponseWriter, r *http.Request) {
	if p.Memories == nil {
		p.RenderError(w, r, errNoMemory)
		return
	}
	p.deleteOwned(w, r, "memoryID", errNoMemory, p.Memories.DeleteMemory,
		"Forgotten. The agent no longer remembers it.", "/account#memories")
}

// SubmitDeleteMemories forgets all the user's facts with the agent the
// form names, or with every agent when it names none.
func (p *Pages) SubmitDeleteMemories(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	agentID := r.PostForm.Get("agent")
	n := 0
	if p.Memories != nil {
		var err error
		if n, err = p.Memories.DeleteMemories(r.Context(), u.ID, agentID); err != nil {
			p.RenderError(w, r, err)
			return
		}
	}
	msg := "Forgotten: " + strconv.Itoa(n) + " facts."
	switch n {
	case 0:
		msg = "There was nothing to forget."
	case 1:
		msg = "Forgotten: 1 fact."
	}
	p.flash(r, msg)
	redirect(w, r, "/account#memories")
}
