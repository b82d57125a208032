package store

import (
	"context"
	"errors"
	"fmt"
)

// MaxOwnPage bounds a page of Sink.OwnEnvelopes: a sync page
// (p2p/catalogsync's PageSize).
const MaxOwnPage = 64

// OwnEnvelopes serves a page of the listings this node hosts for catalogue
// sync (p2p's own pages, /agentsite/sync/1.1.0 with "own"): the envelopes
// of the hosted listings valid now, tombstones excluded, in id order after
// the id after ("" from the start), at most limit (1..MaxOwnPage). next is
// the id to continue after, "" on the last page.
//
// A peer that met this node while it filled from another started at this
// node's head and would otherwise get the listings this node hosted before
// (registered before the mesh formed, so gossip never carried them) only
// at their re-sign, half a TTL later.
//
// It reads at most limit+1 rows of the hosted listings' index (LocalRefs)
// and the envelopes of those valid now by id, in one statement when the
// store reads many listings at once (AgentsGetter): whatever a peer asks,
// a page costs two bounded reads.
func (s *Sink) OwnEnvelopes(ctx context.Context, after string, limit int) (envs [][]byte, next string, err error) {
	limit = min(max(limit, 1), MaxOwnPage)
	refs, err := s.Store.LocalRefs(ctx, LocalQuery{After: after, Limit: limit + 1})
	if err != nil {
		return nil, "", fmt.Errorf("own listings: %w", err)
	}
	if len(refs) > limit {
		refs, next = refs[:limit], refs[limit-1].ID
	}
	now := s.now()
	ids := make([]string, 0, len(refs))
	for _, r := range refs {
		if r.ExpiresAt.After(now) {
			ids = append(ids, r.ID)
		}
	}
	ls, err := getAgents(ctx, s.Store, ids)
	if err != nil {
		return nil, "", fmt.Errorf("own listings: %w", err)
	}
	envs = make([][]byte, 0, len(ls))
	for _, l := range ls {
		if l.Local && !l.Record.Tombstone && l.Envelope != nil && l.Record.ExpiresAt.After(now) {
			envs = append(envs, l.Envelope)
		}
	}
	return envs, next, nil
}

// getAgents reads the listings of ids from n: in one call when n reads
// many at once, else one by one (ids it lacks are left out).
func getAgents(ctx context.Context, n Network, ids []string) ([]Listing, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if g, ok := n.(AgentsGetter); ok {
		return g.GetAgents(ctx, ids)
	}
	out := make([]Listing, 0, len(ids))
	for _, id := range ids {
		l, err := n.GetAgent(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// GetAgents reads many listings, uncached (as GetAgent): in one call when
// the Network it wraps reads many at once (both engines, and the search
// index in front of them), else one by one. Own pages (Sink.OwnEnvelopes)
// read their envelopes through it.
func (c *Cache) GetAgents(ctx context.Context, ids []string) ([]Listing, error) {
	return getAgents(ctx, c.next, ids)
}
