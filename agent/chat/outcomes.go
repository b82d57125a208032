package chat

import (
	"context"
	"errors"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Outcomes hears how each turn of one of this node's agents went: the
// passive half of agent health (registry.Health). ok is false only when
// the agent's backend failed; latency is the time to the first text (or to
// the end, if none was streamed), what a person waits before the answer
// starts.
type Outcomes interface {
	RecordTurn(agentID string, ok bool, latency time.Duration)
}

// Measured is an Answerer that tells Outcomes how each turn went. Chat
// uses it for local turns when Chat.Outcomes is set; the node wraps the
// runtime in it for the turns other nodes send too, so every turn of a
// local agent counts once.
type Measured struct {
	Answerer Answerer
	Outcomes Outcomes
}

// Answer implements Answerer. Turns that say nothing of the backend are
// not counted: the caller went away or its deadline passed, the caller's
// emit failed, the agent is not hosted here, or the node itself failed.
func (m Measured) Answer(ctx context.Context, t agent.Turn, emit func(chunk string) error) (string, error) {
	start := time.Now()
	var first time.Duration
	measured := func(chunk string) error {
		if first == 0 {
			first = max(time.Since(start), 1)
		}
		if emit == nil {
			return nil
		}
		return emit(chunk)
	}
	reply, err := m.Answerer.Answer(ctx, t, measured)
	if first == 0 {
		first = time.Since(start)
	}
	switch {
	case err == nil:
		m.Outcomes.RecordTurn(t.AgentID, true, first)
	case ctx.Err() == nil && backendFailed(err):
		m.Outcomes.RecordTurn(t.AgentID, false, first)
	}
	return reply, err
}

// backendFailed reports a failure of the agent's backend (the runtime's
// classified errors), as opposed to the node's or the caller's (a failed
// emit comes back unclassified).
func backendFailed(err error) bool {
	for _, kind := range []error{agent.ErrBackendTimeout, agent.ErrBackendUnavailable, agent.ErrBackendRejected,
		agent.ErrBadBackendReply, agent.ErrReplyTooLarge, agent.ErrBlockedAddress} {
		if errors.Is(err, kind) {
			return true
		}
	}
	return false
}

// local is what answers this node's own agents: Local, measured when
// Outcomes is set.
func (c *Chat) local() Answerer {
	if c.Outcomes == nil {
		return c.Local
	}
	return Measured{Answerer: c.Local, Outcomes: c.Outcomes}
}
