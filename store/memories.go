package store

import (
	"context"
	"time"
)

// Memory is one fact an llm agent with memory remembered for a person
// (docs/agents.md, "Memory"): the portal account it is for, the agent
// that keeps it, the fact as the model wrote it.
type Memory struct {
	ID        int64
	UserID    int64
	AgentID   string
	Fact      string
	CreatedAt time.Time
}

// Bounds of what is remembered for one person with one agent: AddMemory
// forgets the oldest facts beyond them.
const (
	// MaxMemoryFactBytes bounds one fact; the runtime refuses a longer
	// one with a message the model reads.
	MaxMemoryFactBytes = 1 << 10
	// MaxMemoriesPerAgent bounds the facts of one person with one agent.
	MaxMemoriesPerAgent = 200
	// MaxMemoryBytesPerAgent bounds their bytes together.
	MaxMemoryBytesPerAgent = 32 << 10
	// MaxMemoriesListed bounds one ListMemories.
	MaxMemoriesListed = 1000
)

// Memories are the facts llm agents remember for people.
type Memories interface {
	// AddMemory stores m (its ID and CreatedAt are the store's: m's
	// CreatedAt, or now when zero) and, in the same transaction, forgets
	// the oldest facts of m.UserID with m.AgentID beyond
	// MaxMemoriesPerAgent and MaxMemoryBytesPerAgent. It returns the
	// stored fact and how many were forgotten; ErrNotFound if there is no
	// such user.
	AddMemory(ctx context.Context, m Memory) (Memory, int, error)
	// ListMemories returns userID's facts with agentID ("": with every
	// agent), newest first, at most limit (0 or more than
	// MaxMemoriesListed: MaxMemoriesListed).
	ListMemories(ctx context.Context, userID int64, agentID string, limit int) ([]Memory, error)
	// DeleteMemory forgets one fact of userID: ErrNotFound if it has no
	// fact with that id.
	DeleteMemory(ctx context.Context, userID, id int64) error
	// DeleteMemories forgets userID's facts with agentID ("": with every
	// agent) and returns how many went.
	DeleteMemories(ctx context.Context, userID int64, agentID string) (int, error)
}

// MemoryLimit is limit as ListMemories reads it.
func MemoryLimit(limit int) int {
	if limit <= 0 || limit > MaxMemoriesListed {
		return MaxMemoriesListed
	}
	return limit
}
