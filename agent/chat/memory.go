package chat

import (
	"context"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// The runtime refuses a fact the store would not keep.
const _ = uint(store.MaxMemoryFactBytes - runtime.MaxFactBytes)

// Memories is the memory manager of llm agents with memory: the
// runtime's Memory on the store, facts per portal account and agent
// (docs/agents.md, "Memory"). The account page reads and deletes them
// through the store.
type Memories struct {
	Store store.Memories
	// Now stamps each fact; nil: time.Now.
	Now func() time.Time
}

var _ runtime.Memory = Memories{}

// Remember implements runtime.Memory.
func (m Memories) Remember(ctx context.Context, person int64, agentID, fact string) (int, error) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	_, forgotten, err := m.Store.AddMemory(ctx, store.Memory{UserID: person, AgentID: agentID, Fact: fact, CreatedAt: now()})
	return forgotten, err
}

// Facts implements runtime.Memory: every fact the store keeps of person
// with agentID (at most store.MaxMemoriesPerAgent), newest first.
func (m Memories) Facts(ctx context.Context, person int64, agentID string) ([]string, error) {
	ms, err := m.Store.ListMemories(ctx, person, agentID, store.MaxMemoriesPerAgent)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ms))
	for i, x := range ms {
		out[i] = x.Fact
	}
	return out, nil
}
