package chat

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// UserNamer finds the account behind a conversation owner key.
type UserNamer interface {
	GetUserByID(ctx context.Context, id int64) (store.User, error)
}

// ownerSees reports whether owner may read what local agent l's backend
// said when a turn fails: the operator, and the account that owns l. A
// backend's errors are its owner's business (they name its URL, its model,
// its key's fate); everyone else is told the agent could not answer.
func (c *Chat) ownerSees(ctx context.Context, owner Owner, l store.Listing) bool {
	if !l.Local {
		return false
	}
	if owner == OperatorOwner {
		return true
	}
	id, ok := strings.CutPrefix(string(owner), "user:")
	if !ok || c.Users == nil || l.Record.Owner == "" {
		return false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return false
	}
	u, err := c.Users.GetUserByID(ctx, n)
	return err == nil && u.Handle == l.Record.Owner
}

// maxOwnerDetail bounds what a backend said, as its owner is shown it.
const maxOwnerDetail = 300

// forOwner is e as the agent's owner reads it: what the backend said (the
// runtime's summary, kept free of secrets) and what to do about it.
func forOwner(e *agent.Error, err error) *agent.Error {
	var be *runtime.BackendError
	if !errors.As(err, &be) {
		return e
	}
	said := be.Owner
	if said == "" {
		said = be.Public
	}
	if said == "" {
		said = be.Upstream
	}
	if said == "" {
		said = be.Kind.Error()
	}
	if len(said) > maxOwnerDetail {
		said = said[:maxOwnerDetail] + "…"
	}
	return e.With(strings.TrimSuffix(e.Message, ".") + ". You own this agent: its " + be.Backend + " backend said: " +
		strings.TrimSuffix(said, ".") + ". " + ownerHint(be)).Wrap(err)
}

// ownerHint is what an owner can do about a failure of kind.
func ownerHint(be *runtime.BackendError) string {
	switch {
	case errors.Is(be.Kind, agent.ErrBlockedAddress):
		return "This node does not reach private addresses: use a public URL, or ask its operator to allow this endpoint (--allow-endpoint)."
	case be.Status == 401 || be.Status == 403:
		return "Check the key on the agent's edit page."
	case errors.Is(be.Kind, agent.ErrBackendTimeout):
		return "Check that the backend runs, or choose a faster model."
	case errors.Is(be.Kind, agent.ErrBadBackendReply):
		return "Check the URL: an OpenAI-compatible endpoint usually ends in /v1."
	}
	return "Test backend on the agent's edit page says more."
}
