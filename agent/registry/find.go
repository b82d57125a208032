package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Find loads any listing by id for every surface (pages, API, MCP, chat),
// asking the network when the cache lacks it: ErrNoAgent for a malformed
// or unknown id, ErrAgentGone for a deleted agent. A record found on the
// network was verified and cached before Find returns it.
func (r *Registry) Find(ctx context.Context, id string) (store.Listing, error) {
	if !agent.ValidID(id) {
		return store.Listing{}, ErrNoAgent
	}
	l, err := r.Store.GetAgent(ctx, id)
	if errors.Is(err, store.ErrNotFound) && r.Network != nil {
		l, err = r.lookup(ctx, id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Listing{}, ErrNoAgent
	case err != nil:
		return store.Listing{}, err
	case l.Record.Tombstone:
		return store.Listing{}, ErrAgentGone
	}
	return l, nil
}

// lookup asks the network for id; what it finds was cached by the p2p
// side, so it is read back from the store with its status.
func (r *Registry) lookup(ctx context.Context, id string) (store.Listing, error) {
	if _, err := r.Network.Lookup(ctx, id); err != nil {
		return store.Listing{}, fmt.Errorf("%w: network look-up: %w", store.ErrNotFound, err)
	}
	return r.Store.GetAgent(ctx, id)
}
