package chat

import (
	"context"
	"errors"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// TurnError turns a backend or routing failure into a message a person can
// act on; internal details stay in the error's cause, for logs.
func TurnError(err error, l store.Listing) *agent.Error {
	e := agent.AsError(err)
	switch {
	case errors.Is(err, agent.ErrBackendRejected):
		return agent.ErrBackendRejected.With("The agent's backend refused the request: " + safeDetail(err)).Wrap(err)
	case errors.Is(err, agent.ErrModelBusy) && runtime.PublicMessage(err) != "":
		// How many wait, from this node's scheduler.
		return agent.ErrModelBusy.With("The agent's model is " + runtime.PublicMessage(err) + ".").Wrap(err)
	case errors.Is(err, agent.ErrUnknownAgent):
		return agent.ErrUnknownAgent.With("This agent is not hosted here any more.").Wrap(err)
	case e != nil && e.Kind != agent.KindInternal:
		return e.Wrap(err)
	case errors.Is(err, context.DeadlineExceeded):
		return agent.ErrBackendTimeout.Wrap(err)
	case errors.Is(err, context.Canceled):
		return ErrCanceled.Wrap(err)
	case !l.Local:
		return agent.ErrHostUnreachable.Wrap(err)
	}
	return agent.ErrBackendUnavailable.Wrap(err)
}

// safeDetail is the last part of a backend error, which the runtime keeps
// free of secrets, bounded for display.
func safeDetail(err error) string {
	msg := runtime.PublicMessage(err) // the backend's own summary, whole
	if msg == "" {
		msg = err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}
