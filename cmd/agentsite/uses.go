package main

import (
	"context"
	"log/slog"
	"maps"
	"reflect"
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

// source is the tracker's health (snapshot: a map shared between calls
// and its version, Health.Snapshot) with each agent's count as its
// Uses7d. The heartbeat asks every interval; on a host of 100k agents a
// copy of the map each time was a good part of its idle CPU and garbage,
// so the map is copied only when the tracker's or the counts changed, and
// not at all while no agent had a conversation this week. The map
// returned must not be written to.
func (u *uses) source(snapshot func() (map[string]agent.Health, uint64)) p2p.HealthSource {
	var (
		lastVer    uint64
		lastCounts map[string]int
		last       map[string]agent.Health
	)
	return func() map[string]agent.Health {
		m, ver := snapshot()
		u.mu.Lock()
		defer u.mu.Unlock()
		if len(u.counts) == 0 {
			return m
		}
		if last != nil && ver == lastVer && sameCounts(u.counts, lastCounts) {
			return last
		}
		out := maps.Clone(m)
		for id, n := range u.counts {
			if h, ok := out[id]; ok {
				h.Uses7d = min(n, agent.MaxUses7d)
				out[id] = h
			}
		}
		last, lastVer, lastCounts = out, ver, u.counts
		return out
	}
}

// sameCounts is whether a and b are the same map (refresh replaces it).
func sameCounts(a, b map[string]int) bool {
	return len(a) == len(b) && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
