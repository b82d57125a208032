package main

import (
	"context"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p"
)

// usageWindow is the window of agent.Health.Uses7d.
const usageWindow = 7 * 24 * time.Hour

// conversationCounter is an engine that counts, per hosted agent, the
// conversations with a message since a time (both engines do).
type conversationCounter interface {
	ConversationsSince(ctx context.Context, since time.Time) (map[string]int, error)
}

// uses keeps the week's conversations per hosted agent, counted every
// --uses-interval by Run (one grouped read, not one per heartbeat), and
// adds them to the health the heartbeats carry.
type uses struct {
	counter conversationCounter
	every   time.Duration
	now     func() time.Time
	logger  *slog.Logger

	mu     sync.Mutex
	counts map[string]int
}

// Run counts now and then every u.every until ctx ends.
func (u *uses) Run(ctx context.Context) {
	t := time.NewTicker(u.every)
	defer t.Stop()
	for {
		u.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (u *uses) refresh(ctx context.Context) {
	c, err := u.counter.ConversationsSince(ctx, u.now().Add(-usageWindow))
	if err != nil {
		if ctx.Err() == nil {
			u.logger.Warn("count the week's conversations (the heartbeats keep the last count)", "err", err)
		}
		return
	}
	u.mu.Lock()
	u.counts = c
	u.mu.Unlock()
}

// source is inner with each agent's count as its Uses7d.
func (u *uses) source(inner p2p.HealthSource) p2p.HealthSource {
	return func() map[string]agent.Health {
		m := maps.Clone(inner())
		u.mu.Lock()
		defer u.mu.Unlock()
		for id, h := range m {
			h.Uses7d = min(u.counts[id], agent.MaxUses7d)
			m[id] = h
		}
		return m
	}
}
