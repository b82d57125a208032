package catalogsync

import (
	"context"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"
)

// Own pages: a peer's own listings, pulled once from a peer whose feed was
// adopted at its head.
//
// A joiner that meets k peers at once fills each shard from one of them
// and starts the others' cursors at their heads (syncTracker.claim), so
// that it does not pull the catalogue k times. What such a peer held that
// the filler lacked was then skipped: above all the listings it hosts
// itself, registered before the mesh formed, which gossip never carried
// and which no other feed numbers until their host re-signs them, half a
// TTL later (at 50 nodes starting together the seed held 48 of 100
// listings 3 minutes after start).
//
// So the client asks each peer it adopted a head of, once, for the
// listings that peer hosts: {own: true, after_id, limit, digest: true},
// then {…, want: [...]} for the digests it lacks, page after page in id
// order. It costs ~17 bytes a listing the peer hosts and that this node
// holds, and the envelope of each it lacks: at most the digests of the
// catalogue once over all peers (2 % of it), where pulling each adopted
// peer's whole feed as digests would be the digests of the catalogue
// once per peer. It runs only once no shard is being filled, so that what
// the fill brings is held by then and not pulled twice.
//
// A server that predates own pages ignores own and after_id and answers
// a feed page; its header has no own flag, and the client stops there
// (one page of digests spent) and does not ask that peer again.
//
// The server reads at most MaxOwnPage+1 rows of its hosted listings'
// index and the envelopes of a page by id for each request: cheaper than
// a feed page (which may scan store.MaxSyncScan numbers), under the same
// stream bounds (request size, idle deadline, resource manager).

// OwnCache is what the server of own pages needs: the store's Sink
// implements it. A cache without it serves no own listings (an empty
// page, so the client stops).
type OwnCache interface {
	// OwnEnvelopes is a page of the envelopes of the listings this node
	// hosts, valid now, in id order after the id after, at most limit;
	// next is the id to continue after, "" on the last page.
	OwnEnvelopes(ctx context.Context, after string, limit int) (envs [][]byte, next string, err error)
}

// syncKindOwn is the metrics' kind of an own page request (as digests);
// the envelopes lacked come by want.
const syncKindOwn = "own"

// maxOwnID bounds the ids of an own page's request and answer (agent ids
// are 26 characters).
const maxOwnID = 64

// ownPage serves an own page request.
func (n *Service) ownPage(ctx context.Context, req feedRequest) ([][]byte, feedHeader, error) {
	h := feedHeader{Own: true}
	oc, ok := n.cfg.Cache.(OwnCache)
	limit := min(req.Limit, syncPageSize)
	if !ok || limit <= 0 {
		return [][]byte{}, h, nil
	}
	envs, next, err := oc.OwnEnvelopes(ctx, req.AfterID, limit)
	if err != nil {
		return nil, h, err
	}
	if len(envs) > limit {
		envs = envs[:limit]
	}
	h.NextID, h.More = next, next != ""
	return envs, h, nil
}

// markOwn notes that p's feed was adopted at a head for some shard: what
// p hosts is to be pulled (once).
func (t *syncTracker) markOwn(p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ownPulled[p] {
		return
	}
	if len(t.ownDue) >= maxTracked {
		clear(t.ownDue)
	}
	t.ownDue[p] = true
}

// ownReady reports whether p's own listings are to be pulled now: they
// are due and no shard is being filled.
func (t *syncTracker) ownReady(p peer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ownDue[p] && len(t.filling) == 0
}

// ownWaiting reports whether p's own listings are due, ready or not (its
// loop then asks again soon: client.go).
func (t *syncTracker) ownWaiting(p peer.ID) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ownDue[p]
}

// ownDone notes that p's own listings were pulled (or p serves none).
func (t *syncTracker) ownDone(p peer.ID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.ownDue, p)
	if len(t.ownPulled) >= maxTracked {
		clear(t.ownPulled)
	}
	t.ownPulled[p] = true
}

// own pulls the listings the peer hosts, as digests, then the envelopes
// this node lacks. It reports whether that is done: false when admission
// refused some (their hosts not heard yet) and refused records are not
// passed over, so the next round asks again.
func (c *feedClient) own(ctx context.Context, feed string) (done bool, err error) {
	req := feedRequest{Own: true, Limit: syncPageSize, Digest: true}
	refused := false
	for {
		resp, err := c.page(req)
		if err != nil {
			return false, err
		}
		if !resp.Own {
			return true, nil // a server that predates own pages: nothing to ask it
		}
		if resp.Feed != feed {
			return false, fmt.Errorf("peer %s changed its feed during a sync", c.p)
		}
		if resp.More && resp.NextID <= req.AfterID {
			c.n.in.Reject(pathSync, c.p, fmt.Errorf("%w: own page cursor did not move", errBadPage))
			return false, fmt.Errorf("peer %s: own page cursor did not move", c.p)
		}
		if resp.Digest {
			if resp.Envelopes, err = c.lacking(req, resp); err != nil {
				return false, err
			}
		}
		if c.take(ctx, resp.Envelopes) {
			refused = true
		}
		if !resp.More {
			return !refused || c.skipRefused, nil
		}
		if c.refused >= maxSyncRefused {
			return false, nil
		}
		req.AfterID = resp.NextID
	}
}
