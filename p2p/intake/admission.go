package intake

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/time/rate"

	"github.com/agentsite/agentsite/agent"
)

// The defaults of the admission settings the command line sets (p2p's
// DefaultPublisherRate and DefaultUnheardPerHour, p2p/defaults.go).
const (
	// DefaultPublisherRate is Admission.PublisherPerMinute's default
	// (--publisher-rate): twice what a node paces its own gossip to
	// (p2p/pace.go).
	DefaultPublisherRate = 120
	// DefaultUnheardPerHour is Admission.UnheardPerHour's default
	// (--unheard-per-hour).
	DefaultUnheardPerHour = 1000
)

// Admission says which network listings a node takes in, and how many
// (docs/architecture.md "Peers are adversaries"). The planet is open: by
// default any valid record is admitted, within quotas that no honest peer
// reaches and every flood does.
type Admission struct {
	// Block is peer IDs refused as publishers (their listings) and as
	// peers (no connection).
	Block []string
	// Trust is peer IDs exempt from the quotas below, as publishers and
	// as relayers.
	Trust []string
	// TrustedOnly keeps only listings published by trusted peers (and this
	// node's own).
	TrustedOnly bool
	// TrustDomains are domains whose proved publishers are trusted as
	// Trust's peers are (--trust-domain): a peer counts once this node
	// proved it controls one of them (Verified, agent/verify), for as
	// long as the proof holds. Lower-case, agent.NormalizeDomain's
	// spelling.
	TrustDomains []string
	// Verified is the domains this node proved a peer controls
	// (agent/verify.Claims.Domains); nil: none, and TrustDomains trusts
	// nobody. A publisher with a proved domain is not held to the quota of
	// never-heard publishers (UnheardPerHour): a domain is evidence a
	// fresh identity lacks.
	Verified func(peerID string) []string
	// PublisherPerMinute bounds the fresh records of one publisher that
	// gossip may bring per minute (DefaultPublisherRate; the rest are ignored, and
	// the publisher, if it sent them itself, loses score).
	PublisherPerMinute int
	// RelayerPerMinute bounds the gossip messages one forwarding peer may
	// hand this node per minute, whoever published them (default 1200).
	RelayerPerMinute int
	// UnheardPerHour bounds the listings of publishers never heard from
	// (no heartbeat, no connection) that one relaying peer may place in
	// this node's cache per hour (DefaultUnheardPerHour). An IP group (/24 of IPv4,
	// /48 of IPv6) gets IPGroupFactor times as much, so fresh peer
	// identities on one machine share one allowance.
	UnheardPerHour int
	// UnheardPublishersPerHour bounds how many distinct never-heard
	// publishers one relaying peer may introduce per hour (default 25).
	UnheardPublishersPerHour int
	// IPGroupFactor: an IP group's quota in multiples of a peer's
	// (default 2).
	IPGroupFactor int
	// IntroducedPerHour bounds the never-heard heartbeat authors one
	// forwarding peer may introduce per hour (default 500; an IP group
	// IPGroupFactor times that): a rogue can sign heartbeats for endless
	// fresh identities and forward them, and a heard identity's listings
	// pass the quota of never-heard publishers.
	IntroducedPerHour int
}

func (a *Admission) defaults() {
	if a.PublisherPerMinute <= 0 {
		a.PublisherPerMinute = DefaultPublisherRate
	}
	if a.RelayerPerMinute <= 0 {
		a.RelayerPerMinute = 1200
	}
	if a.UnheardPerHour <= 0 {
		a.UnheardPerHour = DefaultUnheardPerHour
	}
	if a.UnheardPublishersPerHour <= 0 {
		a.UnheardPublishersPerHour = 25
	}
	if a.IPGroupFactor <= 0 {
		a.IPGroupFactor = 2
	}
	if a.IntroducedPerHour <= 0 {
		a.IntroducedPerHour = 500
	}
}

// Reasons a valid record is refused, for the metrics (Reason).
var (
	ErrBlockedPublisher = errors.New("publisher is blocked by the operator")
	ErrUntrusted        = errors.New("publisher is not trusted and the node admits only trusted publishers")
	ErrFlood            = errors.New("peer is over its message rate")
	// ErrUnheardQuota: a relaying peer is over its hourly allowance of
	// listings (or heartbeat authors) of publishers this node does not hear.
	ErrUnheardQuota = fmt.Errorf("%w: over the allowance of never-heard publishers", agent.ErrOverQuota)
)

// Bounds of the admission state itself: a rogue with endless fresh
// identities must not grow it.
const (
	// MaxTracked bounds every per-peer map: the host's per-peer state
	// (sync, serving) takes the same bound.
	MaxTracked    = 50_000
	maxTracked    = MaxTracked
	unheardWindow = time.Hour
	heardFor      = time.Hour
	// penaltyHalfLife is how fast a peer's admission penalty (its
	// application score in GossipSub) decays.
	penaltyHalfLife = 10 * time.Minute
	// maxPenalty caps the penalty: far below the graylist threshold
	// (-80) already.
	maxPenalty = 1000
)

// admission is the node's live admission state: who was heard, each
// relayer's and IP group's unheard allowance this hour, per-peer and
// per-publisher gossip rates, and the penalties that feed GossipSub's
// application-specific score.
type admission struct {
	cfg     Admission
	blocked map[string]bool
	trusted map[string]bool
	domains map[string]bool // TrustDomains

	mu         sync.Mutex
	logged     map[string]time.Time // relaying peer → when a refusal of it was last logged
	heard      map[string]time.Time // publisher (peer ID) → last heartbeat
	unheard    map[string]*window   // relayer or IP group → this hour's count
	publishers map[string]*rate.Limiter
	relayers   map[string]*rate.Limiter
	statuses   map[string]*rate.Limiter // heartbeats per forwarding peer
	penalties  map[peer.ID]penalty
}

type window struct {
	start      time.Time
	listings   int
	publishers map[string]bool
}

type penalty struct {
	v  float64
	at time.Time
}

func newAdmission(cfg Admission) *admission {
	cfg.defaults()
	a := &admission{
		cfg: cfg, blocked: map[string]bool{}, trusted: map[string]bool{},
		heard: map[string]time.Time{}, unheard: map[string]*window{}, logged: map[string]time.Time{},
		publishers: map[string]*rate.Limiter{}, relayers: map[string]*rate.Limiter{},
		statuses: map[string]*rate.Limiter{}, penalties: map[peer.ID]penalty{},
	}
	for _, p := range cfg.Block {
		a.blocked[p] = true
	}
	for _, p := range cfg.Trust {
		a.trusted[p] = true
	}
	if len(cfg.TrustDomains) > 0 && cfg.Verified != nil {
		a.domains = map[string]bool{}
		for _, d := range cfg.TrustDomains {
			a.domains[d] = true
		}
	}
	return a
}

// isTrusted reports whether p (a peer id) is exempt from the quotas: on
// the trust list, or proved to control a trusted domain.
func (a *admission) isTrusted(p string) bool {
	if a.trusted[p] {
		return true
	}
	if a.domains == nil {
		return false
	}
	for _, d := range a.cfg.Verified(p) {
		if a.domains[d] {
			return true
		}
	}
	return false
}

// proved reports whether this node proved p controls a domain: evidence
// a fresh identity does not have (a domain costs money and a DNS record),
// so its listings pass as a heard publisher's.
func (a *admission) proved(p string) bool {
	return a.cfg.Verified != nil && len(a.cfg.Verified(p)) > 0
}

// hear notes a verified heartbeat of p: its listings are a heard host's.
func (a *admission) hear(p string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.heard) >= maxTracked {
		for k, t := range a.heard {
			if now.Sub(t) > heardFor {
				delete(a.heard, k)
			}
		}
		if len(a.heard) >= maxTracked {
			clear(a.heard)
		}
	}
	a.heard[p] = now
}

func (a *admission) wasHeard(p string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	t, ok := a.heard[p]
	return ok && now.Sub(t) < heardFor
}

// refusalLogEvery is how often the log names one relaying peer's
// refusals over the allowance of never-heard publishers.
const refusalLogEvery = time.Minute

// logDue reports whether a refusal of from's is to be logged at now (once
// a refusalLogEvery), and notes it.
func (a *admission) logDue(from string, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.logged[from]; ok && now.Sub(t) < refusalLogEvery {
		return false
	}
	if len(a.logged) >= maxTracked {
		clear(a.logged)
	}
	a.logged[from] = now
	return true
}

// penalise lowers p's application score by w (decaying).
func (a *admission) penalise(p peer.ID, w float64, now time.Time) {
	if p == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	v := decayed(a.penalties[p], now) + w
	if len(a.penalties) >= maxTracked {
		for k, pe := range a.penalties {
			if decayed(pe, now) < 0.5 {
				delete(a.penalties, k)
			}
		}
	}
	a.penalties[p] = penalty{v: min(v, maxPenalty), at: now}
}

// score is p's application-specific GossipSub score: minus its penalty.
func (a *admission) score(p peer.ID, now time.Time) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return -decayed(a.penalties[p], now)
}

func decayed(p penalty, now time.Time) float64 {
	if p.v == 0 {
		return 0
	}
	return p.v * math.Exp2(-now.Sub(p.at).Seconds()/penaltyHalfLife.Seconds())
}

// allowGossip applies the gossip rates: from may forward RelayerPerMinute
// messages, and publisher's fresh records PublisherPerMinute. Trusted
// peers have no rate.
func (a *admission) allowGossip(from peer.ID, publisher string, now time.Time) (relayOK, pubOK bool) {
	if a.isTrusted(from.String()) || a.isTrusted(publisher) {
		return true, true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !limiterFor(a.relayers, from.String(), a.cfg.RelayerPerMinute).AllowN(now, 1) {
		return false, true
	}
	return true, limiterFor(a.publishers, publisher, a.cfg.PublisherPerMinute).AllowN(now, 1)
}

// allowRelayedHeartbeat applies the heartbeat rate of a forwarding peer:
// per interval, twice the heartbeat authors this node hears plus 64. An
// honest forwarder passes on at most one round per author an interval; a
// rogue that signs heartbeats for endless fresh identities is held to the
// planet's size.
func (a *admission) allowRelayedHeartbeat(from peer.ID, interval time.Duration, now time.Time) bool {
	if a.isTrusted(from.String()) {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	perInterval := 2 * (len(a.heard) + 64)
	limit := rate.Limit(float64(perInterval) / interval.Seconds())
	l, ok := a.statuses[from.String()]
	if !ok {
		if len(a.statuses) >= maxTracked {
			clear(a.statuses)
		}
		l = rate.NewLimiter(limit, perInterval)
		a.statuses[from.String()] = l
	}
	l.SetLimitAt(now, limit)
	l.SetBurstAt(now, perInterval)
	return l.AllowN(now, 1)
}

// introduce counts author, a heartbeat author never heard, against the
// hourly allowance of from, the peer that forwarded its heartbeat, and of
// from's IP group; over it, the heartbeat is ignored.
func (a *admission) introduce(author string, from peer.ID, group string, now time.Time) error {
	if a.isTrusted(from.String()) || a.isTrusted(author) {
		return nil
	}
	return a.charge(now, author, false, allowance{"intro:peer:" + from.String(), 0, a.cfg.IntroducedPerHour},
		allowance{"intro:ip:" + group, 0, a.cfg.IntroducedPerHour * a.cfg.IPGroupFactor}, group != "")
}

// allowance is one hourly window's key and bounds (0: no bound on
// listings).
type allowance struct {
	key                  string
	listings, publishers int
}

// charge counts pub, and with listing one listing of it, against the
// relaying peer's window (own) and, with withGroup, its IP group's, at once
// under one lock; if either is full it counts nothing and says which.
func (a *admission) charge(now time.Time, pub string, listing bool, own, group allowance, withGroup bool) error {
	all := []allowance{own}
	if withGroup {
		all = append(all, group)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ws := make([]*window, len(all))
	for i, al := range all {
		w := a.windowFor(al.key, now)
		if listing && w.listings >= al.listings || !w.publishers[pub] && len(w.publishers) >= al.publishers {
			return fmt.Errorf("%w: %s placed %d listings of %d never-heard publishers this hour", ErrUnheardQuota, al.key, w.listings, len(w.publishers))
		}
		ws[i] = w
	}
	for _, w := range ws {
		if listing {
			w.listings++
		}
		w.publishers[pub] = true
	}
	return nil
}

func limiterFor(m map[string]*rate.Limiter, key string, perMinute int) *rate.Limiter {
	l, ok := m[key]
	if !ok {
		if len(m) >= maxTracked {
			clear(m) // a fresh limiter is full: the worst is one burst more
		}
		l = rate.NewLimiter(rate.Limit(float64(perMinute)/60), perMinute)
		m[key] = l
	}
	return l
}

// check decides whether rec, relayed by from (the peer it came from; its
// publisher for its own records) from IP group group, may enter the cache,
// and if so counts it against from's and group's allowance at once, so
// that parallel syncs cannot overshoot it. A record that then does not
// change the cache (a duplicate) has still used the allowance: the quota
// bounds what a relayer may offer, not only what it placed.
func (a *admission) check(rec *agent.Record, from peer.ID, group string, self string, now time.Time) error {
	pub := rec.Publisher
	if err := a.policy(pub, self); err != nil || pub == self {
		return err
	}
	if a.isTrusted(pub) || a.isTrusted(from.String()) || from.String() == pub || a.wasHeard(pub, now) || a.proved(pub) {
		return nil
	}
	return a.charge(now, pub, true, allowance{"peer:" + from.String(), a.cfg.UnheardPerHour, a.cfg.UnheardPublishersPerHour},
		allowance{"ip:" + group, a.cfg.UnheardPerHour * a.cfg.IPGroupFactor, a.cfg.UnheardPublishersPerHour * a.cfg.IPGroupFactor}, group != "")
}

// policy is the operator's part of admission: blocked publishers are
// refused, and with TrustedOnly so is every publisher not trusted.
func (a *admission) policy(pub, self string) error {
	switch {
	case a.blocked[pub]:
		return ErrBlockedPublisher
	case pub == self:
		return nil
	case a.cfg.TrustedOnly && !a.isTrusted(pub):
		return ErrUntrusted
	}
	return nil
}

func (a *admission) windowFor(k string, now time.Time) *window {
	w, ok := a.unheard[k]
	if ok && now.Sub(w.start) < unheardWindow {
		return w
	}
	if !ok && len(a.unheard) >= maxTracked {
		for k2, w2 := range a.unheard {
			if now.Sub(w2.start) >= unheardWindow {
				delete(a.unheard, k2)
			}
		}
		if len(a.unheard) >= maxTracked {
			clear(a.unheard)
		}
	}
	w = &window{start: now, publishers: map[string]bool{}}
	a.unheard[k] = w
	return w
}
