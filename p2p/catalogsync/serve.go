package catalogsync

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
)

// Serving bounds: what a peer may pull from this node's catalogue.
//
// A sync request is a few dozen bytes and its answer a page of up to 64
// envelopes (~57 KB), read from the store: unbounded, one peer with 16
// streams pulled ~80 Mbit/s from a node holding 650 listings and slowed
// its searches. So each peer has a byte budget (a token bucket: a burst,
// then a rate) and so has its IP group (/24 of IPv4, /48 of IPv6), several
// times a peer's; a page is sent once both budgets have room for it. Past
// the budget the page waits, for at most MaxWait; a page that would wait
// longer ends the stream with a refusal the client logs, and the client
// asks again at its next round. A peer has at most StreamsPerPeer sync
// streams open at once, over both protocols. An honest mirror that fills
// from a peer takes ~1,000–2,000 listings a second of ~1 KB (the mirror
// fill figures): the default rate leaves it room twice over, and the
// burst covers a first fill's first ~15,000 listings whole.
//
// A refusal is a JSON object {"refused": reason} without a newline, then
// the end of the stream: a client that predates it reads the end of the
// stream before a page (an error, no strike against the peer); a current
// one reads the reason (ErrRefused).

// ServeLimits bounds what this node sends to the peers that pull its
// catalogue (zero fields: the defaults).
type ServeLimits struct {
	// BytesPerSecond is a peer's rate once its burst is spent
	// (DefaultServeRate, --sync-serve-rate).
	BytesPerSecond int
	// Burst is the bytes a peer may pull at once (DefaultServeBurst,
	// --sync-serve-burst). A page larger than the burst costs the burst.
	Burst int
	// GroupFactor: an IP group's rate and burst in multiples of a
	// peer's (default 4), so that a peer cannot multiply its budget with
	// fresh identities on one network.
	GroupFactor int
	// StreamsPerPeer is how many sync streams a peer may have open at
	// once (default 2: an honest node uses one).
	StreamsPerPeer int
	// MaxWait is the longest a page waits for the budget; past it the
	// stream ends with a refusal (default 5 s, well within the client's
	// page deadline).
	MaxWait time.Duration
	// Now, in tests, is the budgets' clock (nil: the node's).
	Now func() time.Time
}

const (
	// DefaultServeRate and DefaultServeBurst are ServeLimits' defaults
	// (--sync-serve-rate, --sync-serve-burst; p2p names them again).
	DefaultServeRate    = 4 << 20
	DefaultServeBurst   = 16 << 20
	defaultServeFactor  = 4
	defaultServeStreams = 2
	defaultServeWait    = 5 * time.Second
	// minPageCharge is what a page costs at least, so that a peer asking
	// for empty or tiny pages (each a read of the store) cannot ask
	// without end.
	minPageCharge = 2 << 10
	// serveLogEvery: a peer over its budget is named in the log at most
	// once per this interval.
	serveLogEvery = 10 * time.Minute
)

func (l *ServeLimits) defaults() {
	if l.BytesPerSecond <= 0 {
		l.BytesPerSecond = DefaultServeRate
	}
	if l.Burst <= 0 {
		l.Burst = DefaultServeBurst
	}
	if l.GroupFactor <= 0 {
		l.GroupFactor = defaultServeFactor
	}
	if l.StreamsPerPeer <= 0 {
		l.StreamsPerPeer = defaultServeStreams
	}
	if l.MaxWait <= 0 {
		l.MaxWait = defaultServeWait
	}
}

// ErrRefused: the peer ended a sync stream because this node was over
// its budget there (or had too many streams open); the sync resumes at
// its next round.
var ErrRefused = errors.New("the peer refused to serve more sync pages now")

// errServeLimited is this node's side of it: the reason sent.
var errServeLimited = errors.New("sync serving budget")

// Serving actions, for the metrics.
const (
	serveActionPaced   = "paced"   // a page waited for the budget
	serveActionRefused = "refused" // a page would have waited too long: the stream ended
	serveActionBusy    = "busy"    // a stream over StreamsPerPeer was refused
)

// serveLimiter keeps the budgets of the peers and IP groups this node
// serves. Its maps are bounded by maxTracked: an entry with no stream open
// whose budget refilled is the same as none and goes first.
type serveLimiter struct {
	lim    ServeLimits
	now    func() time.Time
	logger *slog.Logger

	mu     sync.Mutex
	peers  map[peer.ID]*servePeer
	groups map[string]*serveBucket

	limited *prometheus.CounterVec
	sent    *prometheus.CounterVec
}

type serveBucket struct {
	bytes *rate.Limiter
	used  time.Time
}

type servePeer struct {
	serveBucket
	streams int
	logged  time.Time
}

func newServeLimiter(lim ServeLimits, now func() time.Time, logger *slog.Logger, reg prometheus.Registerer) (*serveLimiter, error) {
	lim.defaults()
	if lim.Now != nil {
		now = lim.Now
	}
	l := &serveLimiter{lim: lim, now: now, logger: logger, peers: map[peer.ID]*servePeer{}, groups: map[string]*serveBucket{},
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "sync_serve_limited_total",
			Help: "Sync pages and streams this node held back from peers over their serving budget, by protocol and action (paced: a page waited; refused: a stream ended, its page would have waited too long; busy: a stream over the per-peer limit was refused).",
		}, []string{"proto", "action"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "sync_served_bytes_total",
			Help: "Bytes of sync pages this node sent to peers, by protocol.",
		}, []string{"proto"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{l.limited, l.sent} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// refilled is how long an unused budget takes to fill up again.
func (l *serveLimiter) refilled() time.Duration {
	return time.Duration(float64(l.lim.Burst) / float64(l.lim.BytesPerSecond) * float64(time.Second))
}

// serveStream is one sync stream being served: the budgets it draws on.
type serveStream struct {
	l     *serveLimiter
	p     peer.ID
	proto string
	peer  *servePeer
	group *serveBucket // nil: the peer's address has no group
	// groupKey names the group in the log.
	groupKey string
}

// open admits a sync stream of p (from IP group group) or refuses it when
// p has StreamsPerPeer open already.
func (l *serveLimiter) open(p peer.ID, group, proto string) (*serveStream, error) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	sp, ok := l.peers[p]
	if !ok {
		l.sweep(now)
		sp = &servePeer{serveBucket: serveBucket{bytes: rate.NewLimiter(rate.Limit(l.lim.BytesPerSecond), l.lim.Burst)}}
		l.peers[p] = sp
	}
	sp.used = now
	if sp.streams >= l.lim.StreamsPerPeer {
		l.limited.WithLabelValues(proto, serveActionBusy).Inc()
		l.noteLocked(sp, p, group, serveActionBusy, now)
		return nil, fmt.Errorf("%w: at most %d sync streams at once per peer", errServeLimited, l.lim.StreamsPerPeer)
	}
	sp.streams++
	st := &serveStream{l: l, p: p, proto: proto, peer: sp, groupKey: group}
	if group != "" {
		g, ok := l.groups[group]
		if !ok {
			f := l.lim.GroupFactor
			g = &serveBucket{bytes: rate.NewLimiter(rate.Limit(l.lim.BytesPerSecond*f), l.lim.Burst*f)}
			l.groups[group] = g
		}
		g.used = now
		st.group = g
	}
	return st, nil
}

// sweep makes room in the maps when one is full: entries with no stream
// open and idle for as long as a budget takes to refill go, then, if that
// was not enough, every entry with no stream open (a fresh budget costs at
// most one burst more).
func (l *serveLimiter) sweep(now time.Time) {
	if len(l.peers) >= maxTracked {
		for _, idleOnly := range []bool{true, false} {
			for p, sp := range l.peers {
				if sp.streams == 0 && (!idleOnly || now.Sub(sp.used) >= l.refilled()) {
					delete(l.peers, p)
				}
			}
			if len(l.peers) < maxTracked {
				break
			}
		}
	}
	if len(l.groups) >= maxTracked {
		for k, g := range l.groups {
			if now.Sub(g.used) >= l.refilled() {
				delete(l.groups, k)
			}
		}
		if len(l.groups) >= maxTracked {
			clear(l.groups)
		}
	}
}

// close ends the stream's claim on its peer's streams.
func (st *serveStream) close() {
	st.l.mu.Lock()
	st.peer.streams--
	st.peer.used = st.l.now()
	st.l.mu.Unlock()
}

// pace charges a page of size bytes to the peer's and the group's budgets
// and waits until both have room for it; it fails with errServeLimited
// when that would take longer than MaxWait (nothing is charged then).
func (st *serveStream) pace(ctx context.Context, size int) error {
	l := st.l
	charge := max(size, minPageCharge)
	now := l.now()
	l.mu.Lock()
	rp := st.peer.bytes.ReserveN(now, min(charge, st.peer.bytes.Burst()))
	wait := rp.DelayFrom(now)
	var rg *rate.Reservation
	if st.group != nil {
		rg = st.group.bytes.ReserveN(now, min(charge, st.group.bytes.Burst()))
		wait = max(wait, rg.DelayFrom(now))
	}
	action := ""
	switch {
	case wait > l.lim.MaxWait:
		rp.CancelAt(now)
		if rg != nil {
			rg.CancelAt(now)
		}
		action = serveActionRefused
	case wait > 0:
		action = serveActionPaced
	}
	if action != "" {
		l.limited.WithLabelValues(st.proto, action).Inc()
		l.noteLocked(st.peer, st.p, st.groupKey, action, now)
	}
	l.mu.Unlock()
	if action == serveActionRefused {
		return fmt.Errorf("%w: over %d bytes/s a peer after a burst of %d bytes (%d× that an IP group); ask again later",
			errServeLimited, l.lim.BytesPerSecond, l.lim.Burst, l.lim.GroupFactor)
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	l.sent.WithLabelValues(st.proto).Add(float64(size))
	return nil
}

// noteLocked names a peer over its budget in the log, once per peer and
// serveLogEvery.
func (l *serveLimiter) noteLocked(sp *servePeer, p peer.ID, group, action string, now time.Time) {
	if !sp.logged.IsZero() && now.Sub(sp.logged) < serveLogEvery {
		return
	}
	sp.logged = now
	l.logger.Info("a peer pulls this node's catalogue faster than its sync serving budget; its pages wait or its streams end (--sync-serve-rate, --sync-serve-burst raise the budget)",
		"peer", p, "ip_group", group, "action", action, "bytes_per_second", l.lim.BytesPerSecond, "burst", l.lim.Burst, "streams", l.lim.StreamsPerPeer)
}

// openServe admits a sync stream s of proto, or writes the refusal and
// returns nil.
func (n *Service) openServe(s network.Stream, proto string) *serveStream {
	p := s.Conn().RemotePeer()
	st, err := n.serving.open(p, n.h.IPGroup(p), proto)
	if err != nil {
		refuseStream(s, err)
		return nil
	}
	return st
}

// refuseStream writes the refusal (no newline, see above) and ends s.
func refuseStream(s network.Stream, reason error) {
	b, _ := json.Marshal(syncRefusal{Refused: reason.Error()})
	_ = s.SetWriteDeadline(time.Now().Add(syncStreamIdle))
	_, _ = s.Write(b)
	_ = s.CloseWrite()
}

// syncRefusal is what a server writes instead of a page when it refuses.
type syncRefusal struct {
	Refused string `json:"refused"`
}

// asRefusal turns what a client read before the end of the stream (err is
// io.EOF) into ErrRefused with the server's reason, when it is a
// refusal; otherwise it returns err.
func asRefusal(partial []byte, err error) error {
	if !errors.Is(err, io.EOF) || len(partial) == 0 || len(partial) > maxRefusal || !bytes.HasPrefix(partial, []byte(`{"refused":`)) {
		return err
	}
	var r syncRefusal
	if json.Unmarshal(partial, &r) != nil || r.Refused == "" {
		return err
	}
	return fmt.Errorf("%w (it said: %q)", ErrRefused, r.Refused)
}

// maxRefusal bounds a refusal a client reads.
const maxRefusal = 512
