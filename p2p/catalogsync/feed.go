package catalogsync

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agentsite/agentsite/agent"
)

// Incremental catalogue sync (/agentsite/sync/1.1.0): a cursor in each
// peer's change feed, per shard of the id space.
//
// On one stream the client sends newline-delimited JSON requests
// {after, lo, hi, limit} and reads, for each, one line {feed, next, more,
// count} followed by count frames, each an envelope as a uvarint length
// and its bytes (raw, not base64: the bytes on the wire stay close to the
// catalogue's size). after is a change number in the server's feed (store's
// agent_changes: every insert or change of a listing gets a number larger
// than any before); the server answers the envelopes of listings changed
// after it whose id is in [lo, hi), and next, the number to continue
// after. limit 0 asks only for the feed's id and head. feed names the
// server's feed: a cursor kept for another feed (the peer's database was
// made again) starts over.
//
// The client keeps, per peer and shard, the feed, the number it got to and
// whether the shard was once read to its end (FeedCache, persisted), and
// stores it after every page: a sync cut anywhere resumes from the page it
// was on, and once a shard is complete only what changed is pulled. Pages
// have a deadline each (syncPageTimeout); a sync has none and no size cap.
//
// Splitting the work: a shard that no peer has filled yet is claimed by
// one sync at a time (syncTracker), so a joiner connected to k peers pulls
// each shard from one of them. The peers that come within adoptWindow of
// a shard's fill start at their head for it instead of being pulled
// whole; the listings each of them hosts, which the filler may lack (they
// were registered before the mesh formed), are pulled from it once as
// own pages (own.go). What else they held that the filler lacked
// comes through the filler's feed, or when its host re-signs it. A peer
// first met later is pulled whole, once.
//
// A node that speaks only 1.0.0 is synced from with it, once a connection.
type feedRequest struct {
	After int64  `json:"after"`
	Lo    string `json:"lo,omitempty"`
	Hi    string `json:"hi,omitempty"`
	Limit int    `json:"limit"`
	// Digest asks for the page's digests (envelopeDigest) instead of its
	// envelopes: a client that holds most of what changed pulls only
	// what it lacks. A server that predates it ignores it and sends the
	// envelopes (its header then has no digest flag).
	Digest bool `json:"digest,omitempty"`
	// Want asks for the page at after again, but only the envelopes with
	// these digests (hex), at most syncPageSize: the ones a digest page
	// offered that the client lacks. Sent only to a server that answered
	// a digest page.
	Want []string `json:"want,omitempty"`
	// Own asks for a page of the listings the server hosts (own.go)
	// instead of its feed, in id order after AfterID; Digest and Want
	// apply as to a feed page. A server that predates it answers a feed
	// page (its header then has no own flag), which the client drops.
	Own     bool   `json:"own,omitempty"`
	AfterID string `json:"after_id,omitempty"`
}

// feedHeader is the line before a page's frames.
type feedHeader struct {
	Feed  string `json:"feed"`
	Next  int64  `json:"next"`
	More  bool   `json:"more,omitempty"`
	Count int    `json:"count"`
	// Digest: the frames are digests (digestSize bytes each), not
	// envelopes.
	Digest bool `json:"digest,omitempty"`
	// Own: the page is of the server's hosted listings (the request's
	// Own echoed); NextID is the id to continue after, "" on the last.
	Own    bool   `json:"own,omitempty"`
	NextID string `json:"next_id,omitempty"`
}

// feedResponse is a page as read.
type feedResponse struct {
	Feed      string
	Envelopes [][]byte // envelopes, or digests when Digest
	Next      int64
	More      bool
	Digest    bool
	Own       bool
	NextID    string
}

const (
	// maxFeedHeader bounds the line before a page's frames.
	maxFeedHeader = 1 << 10
	// maxFeedRequest bounds a request line of this protocol: a want list
	// of a whole page's digests in hex and the rest.
	maxFeedRequest = syncPageSize*(2*digestSize+3) + 1<<10
)

const (
	syncShards = 8
	// syncCursorTTL: the cursors of a peer not synced with for this long
	// go (checked at most once per syncPruneEvery).
	syncCursorTTL  = 7 * 24 * time.Hour
	syncPruneEvery = time.Hour
	// idAlphabet is the alphabet of agent ids (lower-case base32), in
	// byte order: shards are ranges of ids' first characters.
	idAlphabet = "234567abcdefghijklmnopqrstuvwxyz"
	// filledPeer is the cursor row that says a shard is complete from
	// some peer.
	filledPeer = ""
)

// shardRange is shard i's id range [lo, hi); "" is no bound.
func shardRange(i int) (lo, hi string) {
	w := len(idAlphabet) / syncShards
	if i > 0 {
		lo = idAlphabet[i*w : i*w+1]
	}
	if i+1 < syncShards {
		hi = idAlphabet[(i+1)*w : (i+1)*w+1]
	}
	return lo, hi
}

// serveFeed answers pages of the cache's change feed.
func (n *Service) serveFeed(s network.Stream) {
	defer s.Close()
	st := n.openServe(s, SyncFeedProtocol)
	if st == nil {
		return
	}
	defer st.close()
	r := bufio.NewReaderSize(io.LimitReader(s, 4<<20), maxFeedRequest)
	w := bufio.NewWriterSize(s, 64<<10)
	feed := ""
	for {
		_ = s.SetReadDeadline(time.Now().Add(syncStreamIdle))
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		var req feedRequest
		if err := json.Unmarshal(line, &req); err != nil || req.After < 0 || req.Limit < 0 || len(req.Lo) > 64 || len(req.Hi) > 64 || len(req.Want) > syncPageSize || len(req.AfterID) > maxOwnID {
			_ = s.Reset()
			return
		}
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		if feed == "" {
			feed, err = n.cfg.Cache.FeedID(ctx)
		}
		var (
			envs [][]byte
			h    feedHeader
		)
		if err == nil {
			if req.Own {
				envs, h, err = n.ownPage(ctx, req)
			} else {
				envs, h.Next, h.More, err = n.cfg.Cache.SyncChanges(ctx, req.After, req.Lo, req.Hi, min(req.Limit, syncPageSize))
			}
		}
		cancel()
		if err != nil {
			n.logger.Warn("serving a sync page failed", "peer", s.Conn().RemotePeer(), "err", err)
			_ = s.Reset()
			return
		}
		h.Feed = feed
		switch {
		case req.Limit > 0 && req.Want != nil:
			envs = wanted(envs, req.Want)
		case req.Limit > 0 && req.Digest:
			h.Digest = true
			for i, env := range envs {
				d := envelopeDigest(env)
				envs[i] = d[:]
			}
		}
		h.Count = len(envs)
		line, merr := json.Marshal(h)
		if merr != nil {
			return
		}
		if err := st.pace(n.ctx, feedPageSize(line, envs)); err != nil {
			if errors.Is(err, errServeLimited) {
				refuseStream(s, err)
			}
			return
		}
		_ = s.SetWriteDeadline(time.Now().Add(syncStreamIdle))
		if err := writeFeedPage(w, line, envs); err != nil {
			return
		}
	}
}

// feedPageSize is the bytes of a page on the wire: its header line and
// frames.
func feedPageSize(line []byte, envs [][]byte) int {
	size := len(line) + 1
	for _, env := range envs {
		size += uvarintLen(uint64(len(env))) + len(env)
	}
	return size
}

// digestSize is the bytes of an envelope's digest: a prefix of its
// SHA-256, long enough that no honest envelope is taken for another.
const digestSize = 16

type digest [digestSize]byte

// envelopeDigest names an envelope in a digest page.
func envelopeDigest(env []byte) digest {
	sum := sha256.Sum256(env)
	return digest(sum[:digestSize])
}

// wanted keeps the envelopes whose digest (hex) is in want.
func wanted(envs [][]byte, want []string) [][]byte {
	set := make(map[string]bool, len(want))
	for _, w := range want {
		set[w] = true
	}
	out := envs[:0]
	for _, env := range envs {
		d := envelopeDigest(env)
		if set[hex.EncodeToString(d[:])] {
			out = append(out, env)
		}
	}
	return out
}

// writeFeedPage writes the header line (JSON, without its newline), then
// each envelope as a frame.
func writeFeedPage(w *bufio.Writer, line []byte, envs [][]byte) error {
	if _, err := w.Write(append(line, '\n')); err != nil {
		return err
	}
	var n [binary.MaxVarintLen64]byte
	for _, env := range envs {
		if _, err := w.Write(n[:binary.PutUvarint(n[:], uint64(len(env)))]); err != nil {
			return err
		}
		if _, err := w.Write(env); err != nil {
			return err
		}
	}
	return w.Flush()
}

// feedClient is one incremental sync with a peer, on one stream.
type feedClient struct {
	n   *Service
	p   peer.ID
	s   network.Stream
	enc *json.Encoder
	r   *bufio.Reader
	// skipRefused: records admission refused are passed over (the cursor
	// moves past them); else the cursor stays before them, so that the
	// next sync asks for them again once their hosts are heard.
	skipRefused bool
	// round labels the metrics (syncRoundFirst, ...).
	round   string
	changed int
	refused int
}

func (c *feedClient) page(req feedRequest) (feedResponse, error) {
	if err := c.send(req); err != nil {
		return feedResponse{}, err
	}
	return c.read(req)
}

func (c *feedClient) send(req feedRequest) error {
	c.n.metrics.requests.WithLabelValues(kindOf(req), c.round).Inc()
	_ = c.s.SetWriteDeadline(time.Now().Add(syncPageTimeout))
	if err := c.enc.Encode(req); err != nil {
		return fmt.Errorf("sync request to %s: %w", c.p, err)
	}
	return nil
}

// read reads the answer to req: a header line, then its frames, within
// syncPageTimeout. A page that breaks the protocol counts against the
// peer (reject); a refusal (serve.go) or a cut stream does not.
func (c *feedClient) read(req feedRequest) (feedResponse, error) {
	_ = c.s.SetReadDeadline(time.Now().Add(syncPageTimeout))
	resp, read, err := readFeedPage(c.r, req)
	if read > 0 {
		c.n.metrics.bytes.WithLabelValues(kindOf(req), c.round).Add(float64(read))
		c.n.metrics.peers.read(c.p, int64(read), c.n.now())
	}
	if err != nil {
		switch {
		case errors.Is(err, agent.ErrTooLarge):
			c.n.in.Reject(pathSync, c.p, err)
			return feedResponse{}, fmt.Errorf("peer %s sent an oversized sync page: %w", c.p, err)
		case errors.Is(err, errBadPage):
			c.n.in.Reject(pathSync, c.p, err)
		}
		return feedResponse{}, fmt.Errorf("sync response from %s: %w", c.p, err)
	}
	return resp, nil
}

// readFeedPage decodes the answer to req from r (its buffer, maxFeedHeader,
// bounds the header line): it returns the page, the bytes read once the
// header was, and an error that wraps errBadPage or agent.ErrTooLarge when
// the page breaks the protocol, ErrRefused when the server refused.
func readFeedPage(r *bufio.Reader, req feedRequest) (feedResponse, int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return feedResponse{}, 0, fmt.Errorf("%w: sync page header over %d bytes", agent.ErrTooLarge, maxFeedHeader)
		}
		return feedResponse{}, 0, asRefusal(line, err)
	}
	read := len(line)
	var h feedHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return feedResponse{}, read, fmt.Errorf("%w: %w", errBadPage, err)
	}
	if h.Count < 0 || h.Count > syncPageSize || (req.Limit == 0 && h.Count > 0) || (req.Want != nil && h.Count > len(req.Want)) {
		return feedResponse{}, read, fmt.Errorf("%w: page of %d records", agent.ErrTooLarge, h.Count)
	}
	if (h.Digest && !req.Digest) || (h.Own && !req.Own) || len(h.NextID) > maxOwnID {
		return feedResponse{}, read, fmt.Errorf("%w: a page not asked for", errBadPage)
	}
	resp := feedResponse{Feed: h.Feed, Next: h.Next, More: h.More, Digest: h.Digest, Own: h.Own, NextID: h.NextID, Envelopes: make([][]byte, 0, h.Count)}
	for range h.Count {
		size, err := binary.ReadUvarint(r)
		if err != nil {
			return feedResponse{}, read, err
		}
		if size == 0 || size > agent.MaxRecordBytes || (h.Digest && size != digestSize) {
			return feedResponse{}, read, fmt.Errorf("%w: sync frame of %d bytes", agent.ErrTooLarge, size)
		}
		env := make([]byte, size)
		if _, err := io.ReadFull(r, env); err != nil {
			return feedResponse{}, read, err
		}
		read += uvarintLen(size) + len(env)
		resp.Envelopes = append(resp.Envelopes, env)
	}
	if resp.Feed == "" || len(resp.Feed) > 64 || resp.Next < 0 {
		return feedResponse{}, read, fmt.Errorf("%w: sync page without a feed", errBadPage)
	}
	return resp, read, nil
}

// take verifies, admits and caches a page's records; it reports whether
// admission refused any.
func (c *feedClient) take(ctx context.Context, envs [][]byte) (refused bool) {
	changed, ref := c.n.takePage(ctx, c.p, c.round, envs)
	c.changed, c.refused = c.changed+changed, c.refused+ref
	return ref > 0
}

// feedSync pulls what changed in p's catalogue since the cursors this node
// keeps for p (everything, the first time, but for the shards another
// peer already filled), and moves the cursors, its requests counted under
// round. It returns how many records changed the cache. Errors wrap
// agent.ErrOverQuota when admission refused records.
func (n *Service) feedSync(ctx context.Context, p peer.ID, skipRefused bool, round string) (int, error) {
	s, err := n.host.NewStream(network.WithAllowLimitedConn(ctx, "sync"), p, protocol.ID(SyncFeedProtocol))
	if err != nil {
		return 0, fmt.Errorf("open sync stream to %s: %w", p, err)
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	c := &feedClient{n: n, p: p, s: s, enc: json.NewEncoder(s), r: bufio.NewReaderSize(s, maxFeedHeader), skipRefused: skipRefused, round: round}
	head, err := c.page(feedRequest{Limit: 0})
	if err != nil {
		return 0, err
	}
	if err := n.syncs.loadFilled(ctx, n.cfg.Cache); err != nil {
		return 0, err
	}
	if err := n.syncs.loadHeld(ctx, n.cfg.Cache); err != nil {
		return 0, err
	}
	n.pruneCursors(ctx)
	for shard := 0; shard < syncShards; shard++ {
		if err := c.shard(ctx, shard, head); err != nil {
			return c.changed, err
		}
		if c.refused >= maxSyncRefused {
			return c.changed, fmt.Errorf("%w: stopped syncing from %s after %d refused records", agent.ErrOverQuota, p, c.refused)
		}
	}
	if n.syncs.ownReady(p) {
		done, err := c.own(ctx, head.Feed)
		if err != nil {
			return c.changed, err
		}
		if done {
			n.syncs.ownDone(p)
		}
	}
	if c.refused > 0 {
		return c.changed, fmt.Errorf("%w: %d records of %s refused", agent.ErrOverQuota, c.refused, p)
	}
	return c.changed, nil
}

// shard pulls one shard of the peer's feed from its cursor.
func (c *feedClient) shard(ctx context.Context, shard int, head feedResponse) error {
	cache, ps := c.n.cfg.Cache, c.p.String()
	feed, after, complete, err := cache.SyncCursor(ctx, ps, shard)
	if err != nil {
		return err
	}
	if feed != head.Feed {
		after, complete = 0, false
	}
	if complete && !head.More && after >= head.Next {
		return nil // nothing numbered since: an idle round costs the head request only
	}
	if !complete {
		claim := c.n.syncs.claim(shard, c.p, c.n.now())
		if claim == shardFilled || claim == shardPull {
			// Filled from another peer while this one was met: pull only
			// what changed here since the head seen then.
			if early, ok := c.n.syncs.takeHead(c.p, shard, head.Feed); ok {
				after, complete = early, true
				claim = shardClaimed
				c.n.syncs.markOwn(c.p) // what it held before that head
			}
		}
		switch claim {
		case shardFilled:
			// Just filled from another peer: only what changes here from
			// now on, once the peer's head is settled.
			if head.More {
				return nil
			}
			c.n.syncs.markOwn(c.p) // what it held before its head
			return cache.SetSyncCursor(ctx, ps, shard, head.Feed, head.Next, true)
		case shardBusy:
			// Another sync is filling it; this peer starts from its head
			// as it is now once that is done (settled heads only).
			if !head.More {
				c.n.syncs.rememberHead(c.p, shard, head.Feed, head.Next)
			}
			c.n.syncs.markOwn(c.p) // its cursor will start at a head
			return nil
		case shardClaimed:
			if !complete {
				defer c.n.syncs.release(shard, c.p)
			}
		}
	}
	lo, hi := shardRange(shard)
	frozen := false // a record was refused: the cursor stays before it
	// Pages come as digests unless this is the shard's first fill: then
	// this node holds most of what the peer's feed numbered (by gossip,
	// or from the peer that filled the shard, or from an attempt that
	// admission cut short) and pulls only the envelopes it lacks.
	req := feedRequest{After: after, Lo: lo, Hi: hi, Limit: syncPageSize, Digest: complete || c.n.syncs.mostlyHeld(shard)}
	if err := c.send(req); err != nil {
		return err
	}
	for {
		resp, err := c.read(req)
		if err != nil {
			return err
		}
		if resp.Feed != head.Feed {
			return fmt.Errorf("peer %s changed its feed during a sync", c.p)
		}
		if resp.Next <= after && resp.More {
			c.n.in.Reject(pathSync, c.p, fmt.Errorf("%w: sync cursor did not move", errBadPage))
			return fmt.Errorf("peer %s: sync cursor did not move", c.p)
		}
		if resp.Digest {
			if resp.Envelopes, err = c.lacking(req, resp); err != nil {
				return err
			}
		}
		// Ask for the next page before taking this one: the peer reads it
		// while this node verifies and stores. (A return below with a
		// request pending ends the whole sync, and the stream with it.)
		if resp.More {
			req.After = resp.Next
			if err := c.send(req); err != nil {
				return err
			}
		}
		if c.take(ctx, resp.Envelopes) && !c.skipRefused {
			frozen = true
		}
		after = max(after, resp.Next)
		done := !resp.More
		if !frozen {
			if err := cache.SetSyncCursor(ctx, ps, shard, head.Feed, after, complete || done); err != nil {
				return err
			}
		}
		if done {
			if frozen && !complete {
				c.n.syncs.markTried(shard)
			}
			if !frozen && !complete {
				c.n.syncs.markFilled(shard, c.n.now())
				if err := cache.SetSyncCursor(ctx, filledPeer, shard, head.Feed, 0, true); err != nil {
					return err
				}
			}
			return nil
		}
		if c.refused >= maxSyncRefused {
			return fmt.Errorf("%w: stopped syncing from %s after %d refused records", agent.ErrOverQuota, c.p, c.refused)
		}
	}
}

// lacking asks the peer, for a digest page that answered req, for the
// envelopes of the digests this node does not hold, and returns them (none
// when it holds them all: the page cost its digests only).
func (c *feedClient) lacking(req feedRequest, page feedResponse) ([][]byte, error) {
	var want []string
	seen := make(map[digest]bool, len(page.Envelopes))
	for _, b := range page.Envelopes {
		d := digest(b)
		if seen[d] {
			continue
		}
		seen[d] = true
		if c.n.syncs.holds(d) {
			c.n.countSynced(c.p, c.round, "held", "", c.n.now())
			continue
		}
		want = append(want, hex.EncodeToString(d[:]))
	}
	if len(want) == 0 {
		return nil, nil
	}
	wreq := req // the same page (of the feed, or own), only these
	wreq.Digest, wreq.Want = false, want
	resp, err := c.page(wreq)
	if err != nil {
		return nil, err
	}
	if resp.Feed != page.Feed {
		return nil, fmt.Errorf("peer %s changed its feed during a sync", c.p)
	}
	// What the peer renumbered meanwhile is missing here; it is above
	// the digest page's next, so a later page brings it. What gossip
	// brought while the want was answered is held now: dropped, and
	// counted apart from the envelopes asked for though held (none).
	lacked := resp.Envelopes[:0]
	for _, env := range resp.Envelopes {
		if c.n.syncs.holds(envelopeDigest(env)) {
			c.n.countSynced(c.p, c.round, "raced", "", c.n.now())
			continue
		}
		lacked = append(lacked, env)
	}
	return lacked, nil
}

// pruneCursors drops the cursors of peers gone for a week, at most once per
// syncPruneEvery.
func (n *Service) pruneCursors(ctx context.Context) {
	if !n.syncs.pruneDue(n.now()) {
		return
	}
	if _, err := n.cfg.Cache.PruneSyncCursors(ctx, n.now().Add(-syncCursorTTL)); err != nil && ctx.Err() == nil {
		n.logger.Debug("pruning sync cursors failed", "err", err)
	}
}

// kindOf is a request's kind for the metrics.
func kindOf(req feedRequest) string {
	switch {
	case req.Limit == 0:
		return syncKindHead
	case req.Want != nil:
		return syncKindWant
	case req.Own:
		return syncKindOwn
	case req.Digest:
		return syncKindDigest
	}
	return syncKindPage
}

// uvarintLen is how many bytes x takes as a uvarint.
func uvarintLen(x uint64) int {
	var b [binary.MaxVarintLen64]byte
	return binary.PutUvarint(b[:], x)
}
