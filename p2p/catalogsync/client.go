package catalogsync

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/intake"
)

// The catalogue sync protocol (/agentsite/sync/1.0.0): on one stream the
// client sends newline-delimited JSON requests {after, tag, limit} and reads
// one JSON response {envelopes, next} for each, until next is 0. Every
// envelope is verified as if it came by gossip.
type syncRequest struct {
	After int64  `json:"after"`
	Tag   string `json:"tag,omitempty"`
	Limit int    `json:"limit"`
}

type syncResponse struct {
	Envelopes [][]byte `json:"envelopes"`
	Next      int64    `json:"next"`
}

const (
	syncPageSize    = 64
	maxSyncResponse = syncPageSize*(16<<10)*4/3 + 64<<10 // base64 of a full page, with room
	maxSyncRequest  = 1 << 10
	syncStreamIdle  = 30 * time.Second
	// syncPageTimeout bounds the wait for one page (request and reply).
	syncPageTimeout = 20 * time.Second
	// syncTimeout bounds one whole sync; pages have their own deadline, so
	// this only stops a peer that trickles valid pages forever.
	syncTimeout = 15 * time.Minute
	// maxSyncRefused ends a sync from a peer once admission refused this
	// many of its records (two pages' worth).
	maxSyncRefused   = 2 * syncPageSize
	syncRepeatAfter  = 30 * time.Second
	maxParallelSyncs = 4
)

// serveSync answers catalogue pages from the cache.
func (n *Service) serveSync(s network.Stream) {
	defer s.Close()
	st := n.openServe(s, SyncProtocol)
	if st == nil {
		return
	}
	defer st.close()
	r := bufio.NewReaderSize(io.LimitReader(s, 1<<20), maxSyncRequest)
	for {
		_ = s.SetReadDeadline(time.Now().Add(syncStreamIdle))
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		var req syncRequest
		if err := json.Unmarshal(line, &req); err != nil || req.After < 0 || len(req.Tag) > 64 {
			_ = s.Reset()
			return
		}
		limit := min(max(req.Limit, 1), syncPageSize)
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		envs, next, err := n.cfg.Cache.Envelopes(ctx, req.After, req.Tag, limit)
		cancel()
		if err != nil {
			n.logger.Warn("serving a sync page failed", "peer", s.Conn().RemotePeer(), "err", err)
			_ = s.Reset()
			return
		}
		page, err := json.Marshal(syncResponse{Envelopes: envs, Next: next})
		if err != nil {
			return
		}
		page = append(page, '\n')
		if err := st.pace(n.ctx, len(page)); err != nil {
			if errors.Is(err, errServeLimited) {
				refuseStream(s, err)
			}
			return
		}
		_ = s.SetWriteDeadline(time.Now().Add(syncStreamIdle))
		if _, err := s.Write(page); err != nil {
			return
		}
	}
}

// SyncFrom pulls p's catalogue (or, with tag, only listings with that tag),
// verifies each record, admits it (p2p/intake) and caches it. It returns
// how many records changed the cache.
//
// A peer is an adversary here too: every page is read as one line of at
// most maxSyncResponse bytes under its own deadline (syncPageTimeout), so
// a reply can neither grow the node's memory past one page nor hold the
// stream open; and a peer whose pages are mostly refused by admission (over
// its quota of listings of never-heard publishers) is stopped.
func (n *Service) SyncFrom(ctx context.Context, p peer.ID, tag string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	s, err := n.host.NewStream(network.WithAllowLimitedConn(ctx, "sync"), p, protocol.ID(SyncProtocol))
	if err != nil {
		return 0, fmt.Errorf("open sync stream to %s: %w", p, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	enc := json.NewEncoder(s)
	r := bufio.NewReaderSize(s, maxSyncResponse)
	changed, seen, refused := 0, 0, 0
	var after int64
	for {
		_ = s.SetWriteDeadline(time.Now().Add(syncPageTimeout))
		if err := enc.Encode(syncRequest{After: after, Tag: tag, Limit: syncPageSize}); err != nil {
			return changed, fmt.Errorf("sync request to %s: %w", p, err)
		}
		resp, err := readSyncPage(s, r)
		if err != nil {
			switch {
			case errors.Is(err, bufio.ErrBufferFull):
				n.in.Reject(pathSync, p, fmt.Errorf("%w: sync page over %d bytes", agent.ErrTooLarge, maxSyncResponse))
			case errors.Is(err, errBadPage):
				n.in.Reject(pathSync, p, err)
			}
			return changed, fmt.Errorf("sync response from %s: %w", p, err)
		}
		if len(resp.Envelopes) > syncPageSize {
			n.in.Reject(pathSync, p, fmt.Errorf("%w: page of %d records", agent.ErrTooLarge, len(resp.Envelopes)))
			return changed, fmt.Errorf("peer %s sent an oversized sync page", p)
		}
		seen += len(resp.Envelopes)
		ch, ref := n.takePage(ctx, p, syncRoundOther, resp.Envelopes)
		changed, refused = changed+ch, refused+ref
		if refused >= maxSyncRefused {
			return changed, fmt.Errorf("%w: stopped syncing from %s after %d refused records", agent.ErrOverQuota, p, refused)
		}
		if resp.Next == 0 || resp.Next <= after || seen >= n.cfg.MaxSyncRecords {
			if refused > 0 {
				return changed, fmt.Errorf("%w: %d records of %s refused", agent.ErrOverQuota, refused, p)
			}
			return changed, nil
		}
		after = resp.Next
	}
}

// takePage verifies and admits each envelope of a sync page from p, as
// gossip would each (admission charges record by record), then hands the
// records admitted to the cache in one call, which stores them in one
// transaction: one per record was most of a mirror's fill. It returns how
// many records changed the cache and how many admission refused.
func (n *Service) takePage(ctx context.Context, p peer.ID, round string, envs [][]byte) (changed, refused int) {
	recs := make([]*agent.Record, 0, len(envs))
	kept := make([][]byte, 0, len(envs))
	now := n.now()
	count := func(result string) { n.countSynced(p, round, result, "", now) }
	for _, env := range envs {
		rec, err := n.h.Verify(env, now)
		if err != nil {
			n.in.Reject(pathSync, p, err)
			n.countSynced(p, round, "invalid", intake.Reason(err), now)
			continue
		}
		if err := n.h.CheckSeq(rec.ID, rec.Seq); err != nil {
			n.in.Outdated(pathSync, err)
			n.syncs.hold(env)
			count("outdated")
			continue
		}
		if err := n.in.Admit(rec, p, n.h.IPGroup(p)); err != nil {
			n.in.Refuse(pathSync, p, err)
			n.countSynced(p, round, "refused", intake.Reason(err), now)
			refused++
			continue
		}
		recs, kept = append(recs, rec), append(kept, env)
	}
	if len(recs) == 0 {
		return 0, refused
	}
	chs, errs := n.cfg.Cache.PutAll(ctx, recs, kept)
	for i, rec := range recs {
		switch {
		case n.h.Deliver(ctx, p, rec, chs[i], errs[i]):
			changed++
			n.syncs.hold(kept[i])
			count("new")
		case errs[i] == nil:
			n.syncs.hold(kept[i])
			count("known")
		default:
			n.countSynced(p, round, "refused", storeRefusal(errs[i]), now)
			if errors.Is(errs[i], agent.ErrOverQuota) {
				// Over its publisher's quota here, which grows while the
				// publisher is heard: the cursor stays before it, so the
				// sync's retries bring it then (a first sync usually runs
				// before the host's first heartbeat arrives).
				refused++
			}
		}
	}
	return changed, refused
}

var errBadPage = errors.New("sync page is not one JSON object")

// readSyncPage reads one page within syncPageTimeout (decodeSyncPage).
func readSyncPage(s network.Stream, r *bufio.Reader) (syncResponse, error) {
	_ = s.SetReadDeadline(time.Now().Add(syncPageTimeout))
	return decodeSyncPage(r)
}

// decodeSyncPage reads one page: a line of at most r's buffer size
// (maxSyncResponse), then decodes it. A longer line is
// bufio.ErrBufferFull: the peer broke the protocol's page limit; the end
// of the stream after a refusal (serve.go) is ErrRefused.
func decodeSyncPage(r *bufio.Reader) (syncResponse, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return syncResponse{}, asRefusal(line, err)
	}
	var resp syncResponse
	if err := json.Unmarshal(line, &resp); err != nil {
		return syncResponse{}, fmt.Errorf("%w: %w", errBadPage, err)
	}
	return resp, nil
}

// syncTracker makes sure a peer that speaks only 1.0.0 is synced from at
// most once per syncRepeatAfter while it stays connected (identification
// completes once per connection, and a peer may hold several), that each
// peer speaking 1.1.0 has one sync loop while connected, and that at most
// maxParallelSyncs syncs run at a time. A peer that disconnects is
// forgotten (its loop ends), so it is synced again as soon as it is back:
// a node returning from a partition or a restart brings what it published
// meanwhile, which gossip sent while it was cut off never delivered.
//
// It also hands out the shards of the id space that no peer has filled
// yet (feed.go), one sync at a time each.
type syncTracker struct {
	mu   sync.Mutex
	last map[peer.ID]time.Time
	sem  chan struct{}

	loops     map[peer.ID]*syncLoop
	filling   map[int]peer.ID
	filled    [syncShards]bool
	filledAt  [syncShards]time.Time // when this process filled it (zero: before it started)
	adopt     time.Duration         // adoptWindow; tests change it
	loaded    bool
	lastPrune time.Time
	// early is, per peer and shard, the peer's head when a sync with it
	// found the shard being filled from another peer: where that peer's
	// cursor starts once the fill is done. Adopting the head at that later
	// time instead would skip what changed on the peer meanwhile (a
	// partition between the two, say).
	early map[earlyKey]earlyHead
	// tried: a fill of the shard was cut short by admission (its cursor
	// stayed before the refused records); what it took is held.
	tried [syncShards]bool
	// held is the digests of the envelopes this node took into its cache
	// (by sync or gossip) or passed over as older than one it has: a
	// digest page's envelopes that are held are not pulled (bounded by
	// maxHeld: when full it starts over, and costs only pulls again).
	held       map[digest]struct{}
	heldLoaded bool
	// retrying is the peers whose loop has not synced yet or waits to
	// ask again after a sync that admission cut short.
	retrying map[peer.ID]bool
	// ownDue is the peers whose feed was adopted at a head for some
	// shard and whose own listings are yet to be pulled (own.go);
	// ownPulled those whose own listings were pulled (once a process).
	// Kept across disconnections; bounded by maxTracked each.
	ownDue, ownPulled map[peer.ID]bool
}

// setRetrying notes whether p's loop waits for a quota retry.
func (t *syncTracker) setRetrying(p peer.ID, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if on {
		t.retrying[p] = true
	} else {
		delete(t.retrying, p)
	}
}

// RetriesPending is how many connected peers' first sync has not run
// yet or waits to be asked again because admission refused some of their
// listings (their hosts not heard yet): a start-up fill not finished. The
// benchmarks wait for 0 before they measure an idle planet.
func (n *Service) RetriesPending() int {
	n.syncs.mu.Lock()
	defer n.syncs.mu.Unlock()
	return len(n.syncs.retrying)
}

// maxHeld bounds syncTracker.held: --max-listings' default, at about 40
// bytes an entry (16 of digest and the map's own), so ~40 MB at most, and
// a node holds as many entries as listings. Past it the set starts over,
// which costs pulls again, not correctness.
const maxHeld = 1 << 20

// hold notes that this node holds env (or a newer one of its listing).
func (t *syncTracker) hold(env []byte) {
	d := envelopeDigest(env)
	t.mu.Lock()
	if len(t.held) >= maxHeld {
		clear(t.held)
	}
	t.held[d] = struct{}{}
	t.mu.Unlock()
}

// holds reports whether the envelope of digest d is held.
func (t *syncTracker) holds(d digest) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.held[d]
	return ok
}

// loadHeld notes, once, the envelopes the cache holds (at start: a
// restarted node pulls again only what changed while it was away).
func (t *syncTracker) loadHeld(ctx context.Context, c Cache) error {
	t.mu.Lock()
	loaded := t.heldLoaded
	t.mu.Unlock()
	if loaded {
		return nil
	}
	var after int64
	for n := 0; n < maxHeld; n += syncPageSize {
		envs, next, err := c.Envelopes(ctx, after, "", syncPageSize)
		if err != nil {
			return err
		}
		for _, env := range envs {
			t.hold(env)
		}
		if next == 0 || next <= after {
			break
		}
		after = next
	}
	t.mu.Lock()
	t.heldLoaded = true
	t.mu.Unlock()
	return nil
}

// markTried notes a fill of shard that admission cut short.
func (t *syncTracker) markTried(shard int) {
	t.mu.Lock()
	t.tried[shard] = true
	t.mu.Unlock()
}

// mostlyHeld reports whether this node holds most of shard already (it
// was filled, or a fill of it got part way): then its pages are pulled as
// digests.
func (t *syncTracker) mostlyHeld(shard int) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.filled[shard] || t.tried[shard]
}

type earlyHead struct {
	feed string
	next int64
}

type earlyKey struct {
	p     peer.ID
	shard int
}

// syncLoop is a peer's running sync loop.
type syncLoop struct{ cancel context.CancelFunc }

func newSyncTracker() *syncTracker {
	return &syncTracker{last: map[peer.ID]time.Time{}, sem: make(chan struct{}, maxParallelSyncs),
		loops: map[peer.ID]*syncLoop{}, filling: map[int]peer.ID{}, adopt: adoptWindow, early: map[earlyKey]earlyHead{},
		held: map[digest]struct{}{}, retrying: map[peer.ID]bool{},
		ownDue: map[peer.ID]bool{}, ownPulled: map[peer.ID]bool{}}
}

// forget lets the next connection of p sync at once, and ends p's loop.
func (t *syncTracker) forget(p peer.ID) {
	t.mu.Lock()
	delete(t.last, p)
	if l := t.loops[p]; l != nil {
		l.cancel()
		delete(t.loops, p)
	}
	t.mu.Unlock()
}

func (t *syncTracker) due(p peer.ID, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if last, ok := t.last[p]; ok && now.Sub(last) < syncRepeatAfter {
		return false
	}
	t.last[p] = now
	return true
}

// startLoop registers a loop for p, unless one runs.
func (t *syncTracker) startLoop(p peer.ID, cancel context.CancelFunc) (*syncLoop, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loops[p] != nil {
		return nil, false
	}
	l := &syncLoop{cancel: cancel}
	t.loops[p] = l
	return l, true
}

// endLoop forgets l, if it is still p's loop.
func (t *syncTracker) endLoop(p peer.ID, l *syncLoop) {
	t.mu.Lock()
	if t.loops[p] == l {
		delete(t.loops, p)
	}
	t.mu.Unlock()
	l.cancel()
}

type shardClaim int

const (
	shardClaimed shardClaim = iota // this sync fills it
	shardBusy                      // another sync is filling it
	shardFilled                    // just filled from another peer: start at the head
	shardPull                      // filled long ago: pull it whole from this peer too
)

// adoptWindow is how long after a shard was filled from one peer the
// other peers that come meanwhile (a joiner's first peers) start at their
// head instead of being pulled whole; the listings each of those hosts
// itself are pulled once, as digests, when no shard is being filled
// (own.go). A peer first met later is pulled whole, once (its
// cursor then stays): it may bring listings nobody here had, its own
// above all.
const adoptWindow = 2 * time.Minute

func (t *syncTracker) claim(shard int, p peer.ID, now time.Time) shardClaim {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.filled[shard] {
		if !t.filledAt[shard].IsZero() && now.Sub(t.filledAt[shard]) < t.adopt {
			return shardFilled
		}
		return shardPull
	}
	if q, ok := t.filling[shard]; ok && q != p {
		return shardBusy
	}
	t.filling[shard] = p
	return shardClaimed
}

// rememberHead keeps p's head for shard, seen while another peer filled
// it (the first one seen stays).
func (t *syncTracker) rememberHead(p peer.ID, shard int, feed string, head int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := earlyKey{p, shard}
	if _, ok := t.early[k]; ok {
		return
	}
	if len(t.early) >= maxTracked {
		clear(t.early)
	}
	t.early[k] = earlyHead{feed, head}
}

// takeHead returns and forgets p's remembered head for shard in feed.
func (t *syncTracker) takeHead(p peer.ID, shard int, feed string) (int64, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := earlyKey{p, shard}
	h, ok := t.early[k]
	delete(t.early, k)
	return h.next, ok && h.feed == feed
}

func (t *syncTracker) release(shard int, p peer.ID) {
	t.mu.Lock()
	if t.filling[shard] == p {
		delete(t.filling, shard)
	}
	t.mu.Unlock()
}

func (t *syncTracker) markFilled(shard int, now time.Time) {
	t.mu.Lock()
	if !t.filled[shard] {
		t.filled[shard], t.filledAt[shard] = true, now
	}
	t.mu.Unlock()
}

// loadFilled reads, once, which shards are complete from some peer (kept
// across restarts).
func (t *syncTracker) loadFilled(ctx context.Context, c FeedCache) error {
	t.mu.Lock()
	loaded := t.loaded
	t.mu.Unlock()
	if loaded {
		return nil
	}
	var filled [syncShards]bool
	for shard := range filled {
		_, _, complete, err := c.SyncCursor(ctx, filledPeer, shard)
		if err != nil {
			return err
		}
		filled[shard] = complete
	}
	t.mu.Lock()
	for shard, f := range filled {
		t.filled[shard] = t.filled[shard] || f
	}
	t.loaded = true
	t.mu.Unlock()
	return nil
}

func (t *syncTracker) pruneDue(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if now.Sub(t.lastPrune) < syncPruneEvery {
		return false
	}
	t.lastPrune = now
	return true
}

// WatchPeers starts a catalogue sync with every peer that completes
// identification and speaks a sync protocol: a new mirror fills up, and a
// node back from a partition catches up, without waiting for
// re-announcements. A peer that speaks 1.1.0 is synced with again every
// SyncInterval (jittered) while it stays connected: what gossip lost is
// repaired.
func (n *Service) WatchPeers() {
	sub, err := n.host.EventBus().Subscribe([]any{new(event.EvtPeerIdentificationCompleted), new(event.EvtPeerConnectednessChanged)})
	if err != nil {
		n.logger.Warn("cannot watch peers; catalogue sync on connect is off", "err", err)
		return
	}
	n.h.Go(func(ctx context.Context) {
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-sub.Out():
				if !ok {
					return
				}
				if c, ok := ev.(event.EvtPeerConnectednessChanged); ok {
					if c.Connectedness == network.NotConnected {
						n.syncs.forget(c.Peer)
					}
					continue
				}
				e := ev.(event.EvtPeerIdentificationCompleted)
				n.startSync(ctx, e.Peer, e.Protocols)
			}
		}
	})
	// Peers identified before the subscription (the node dials its
	// bootstrap peers, and accepts connections, as soon as its host is
	// up) sent no event here: without this a node could stay connected
	// to its first peer and never sync with it.
	for _, p := range n.host.Network().Peers() {
		protos, err := n.host.Peerstore().SupportsProtocols(p, SyncFeedProtocol, SyncProtocol)
		if err == nil && len(protos) > 0 {
			n.startSync(n.ctx, p, protos)
		}
	}
}

// startSync starts syncing with p, which speaks protos: a loop for 1.1.0
// (one a peer), a whole pull for 1.0.0 (once per syncRepeatAfter).
func (n *Service) startSync(ctx context.Context, p peer.ID, protos []protocol.ID) {
	if n.h.Blocked(p) {
		return
	}
	switch {
	case speaks(protos, SyncFeedProtocol):
		lctx, cancel := context.WithCancel(ctx)
		l, ok := n.syncs.startLoop(p, cancel)
		if !ok {
			cancel()
			return
		}
		n.h.Go(func(context.Context) {
			defer n.syncs.endLoop(p, l)
			n.syncLoop(lctx, p)
		})
	case speaks(protos, SyncProtocol) && n.syncs.due(p, n.now()):
		n.h.Go(func(ctx context.Context) { n.syncWith(ctx, p) })
	}
}

// syncLoop syncs incrementally with p until ctx ends or p is gone: at once,
// then every SyncInterval ±25 %; a sync that ran into the admission quota
// is tried again sooner (after 3, 6 and 9 heartbeat intervals, as
// syncWith), and the last try passes over what is still refused.
func (n *Service) syncLoop(ctx context.Context, p peer.ID) {
	attempt, round := 0, syncRoundFirst
	n.syncs.setRetrying(p, true) // until the first sync is done
	defer n.syncs.setRetrying(p, false)
	for {
		err := n.syncOnce(ctx, p, func(ctx context.Context) (int, error) {
			return n.feedSync(ctx, p, attempt >= maxQuotaRetries, round)
		})
		round = syncRoundPeriodic
		wait := jitter(n.syncSpacing())
		if errors.Is(err, agent.ErrOverQuota) && attempt < maxQuotaRetries {
			attempt++
			wait = time.Duration(attempt) * quotaRetryIntervals * n.cfg.HeartbeatInterval
			round = syncRoundRetry
		} else if attempt >= maxQuotaRetries || err == nil {
			attempt = 0
		}
		n.syncs.setRetrying(p, attempt > 0)
		if soon := ownRetryIntervals * n.cfg.HeartbeatInterval; n.syncs.ownWaiting(p) && wait > soon {
			// Its feed was adopted while another peer filled a shard:
			// ask again soon, so that its cursor starts and what it hosts
			// comes once the fill is done, not a spacing later (at 50
			// peers, 13 sync intervals).
			wait = soon
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if n.host.Network().Connectedness(p) != network.Connected {
			return
		}
	}
}

// jitter is d ±25 %.
func jitter(d time.Duration) time.Duration {
	return d*3/4 + time.Duration(rand.Int64N(int64(d)/2+1))
}

// syncWith syncs with p over 1.0.0 (a whole-catalogue pull), again while
// admission refuses some of it.
func (n *Service) syncWith(ctx context.Context, p peer.ID) {
	for attempt := 1; ; attempt++ {
		err := n.syncOnce(ctx, p, func(ctx context.Context) (int, error) { return n.SyncFrom(ctx, p, "") })
		if !errors.Is(err, agent.ErrOverQuota) || attempt > maxQuotaRetries {
			return
		}
		// Some listings were over the quota of never-heard publishers.
		// Ask again once the hosts that are alive have been heard (their
		// heartbeats arrive within an interval): a fresh mirror then takes
		// all of a live planet's catalogue, and only listings of hosts
		// nobody hears stay held to the quota.
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt) * quotaRetryIntervals * n.cfg.HeartbeatInterval):
		}
		if n.host.Network().Connectedness(p) != network.Connected {
			return
		}
	}
}

// maxQuotaRetries and quotaRetryIntervals: a sync that ran into the
// admission quota is tried again up to 3 times, after 3, 6 and 9 heartbeat
// intervals.
const (
	maxQuotaRetries     = 3
	quotaRetryIntervals = 3
	// ownRetryIntervals: a peer whose own listings wait for a fill to end
	// (own.go) is asked again after this many heartbeat intervals.
	ownRetryIntervals = 3
)

// syncOnce runs one sync with p, at most maxParallelSyncs at a time.
func (n *Service) syncOnce(ctx context.Context, p peer.ID, sync func(context.Context) (int, error)) error {
	select {
	case n.syncs.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-n.syncs.sem }()
	start := time.Now()
	changed, err := sync(ctx)
	if changed > 0 {
		n.logger.Info("catalogue sync", "peer", p, "records", changed, "took", time.Since(start).Round(time.Millisecond))
	}
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, ErrRefused):
		// The peer is over its serving budget for this node (or holds
		// its streams elsewhere): the next round resumes where this one
		// stopped.
		n.logger.Info("a peer refused part of a catalogue sync; it resumes at the next round", "peer", p, "err", err)
	default:
		n.logger.Debug("catalogue sync failed", "peer", p, "err", err)
	}
	return err
}

func speaks(protos []protocol.ID, want string) bool {
	for _, p := range protos {
		if string(p) == want {
			return true
		}
	}
	return false
}
