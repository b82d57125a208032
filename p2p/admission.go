package p2p

import (
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	manet "github.com/multiformats/go-multiaddr/net"
	"golang.org/x/time/rate"

	"github.com/agentsite/agentsite/agent"
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

// ParsePeerIDs checks a list of peer IDs from the command line (--block-peer,
// --trust-peer).
func ParsePeerIDs(flag string, ids []string) error {
	for _, s := range ids {
		if _, err := peer.Decode(s); err != nil {
			return fmt.Errorf("--%s %q is not a peer ID (%w); copy one from /nodes or a listing's host", flag, s, err)
		}
	}
	return nil
}

// Reasons a valid record is refused, for the metrics (rejectReason).
var (
	errBlockedPublisher = errors.New("publisher is blocked by the operator")
	errUntrusted        = errors.New("publisher is not trusted and the node admits only trusted publishers")
	errFlood            = errors.New("peer is over its message rate")
	// errUnheardQuota: a relaying peer is over its hourly allowance of
	// listings (or heartbeat authors) of publishers this node does not hear.
	errUnheardQuota = fmt.Errorf("%w: over the allowance of never-heard publishers", agent.ErrOverQuota)
)

// Bounds of the admission state itself: a rogue with endless fresh
// identities must not grow it.
const (
	maxTracked    = 50_000
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
			return fmt.Errorf("%w: %s placed %d listings of %d never-heard publishers this hour", errUnheardQuota, al.key, w.listings, len(w.publishers))
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
		return errBlockedPublisher
	case pub == self:
		return nil
	case a.cfg.TrustedOnly && !a.isTrusted(pub):
		return errUntrusted
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

// ipGroup is the IP group of p's connection: the /24 of an IPv4 address,
// the /48 of an IPv6 one, "" when not connected.
func ipGroup(nw network.Network, p peer.ID) string {
	for _, c := range nw.ConnsToPeer(p) {
		ip, err := manet.ToIP(c.RemoteMultiaddr())
		if err != nil {
			continue
		}
		if v4 := ip.To4(); v4 != nil {
			return v4.Mask(net.CIDRMask(24, 32)).String() + "/24"
		}
		return ip.Mask(net.CIDRMask(48, 128)).String() + "/48"
	}
	return ""
}

// knownPublisher reports whether p is a publisher this node hears: a
// heartbeat within the hour, a connection now, or itself.
func (n *Node) knownPublisher(p peer.ID) bool {
	if p == n.host.ID() || n.adm.wasHeard(p.String(), n.now()) {
		return true
	}
	return n.host.Network().Connectedness(p) == network.Connected
}

// admit runs the admission of a verified record that from relayed.
func (n *Node) admit(rec *agent.Record, from peer.ID) error {
	return n.adm.check(rec, from, ipGroup(n.host.Network(), from), n.PeerID(), n.now())
}

// Penalties, in points of GossipSub application score (the graylist
// threshold is -80). A flood message costs a whole point: an honest peer
// never sends one. A listing over quota costs little: an honest peer that
// serves a fresh mirror a large catalogue, before the mirror has heard its
// hosts' heartbeats, goes over the quota too, and its positive topic score
// (first deliveries, time in mesh) must outweigh that; a rogue that only
// offers spam has none.
const (
	floodPenalty = 1
	quotaPenalty = 0.05
)

// refuse counts a valid record that admission refused and lowers the
// relaying peer's score for quota and rate breaches (not for the
// operator's block and trust lists: honest peers relay those).
func (n *Node) refuse(path string, from peer.ID, err error) {
	reason := rejectReason(err)
	n.metrics.rejected.WithLabelValues(path, reason).Inc()
	switch {
	case errors.Is(err, errFlood):
		n.adm.penalise(from, floodPenalty, n.now())
	case errors.Is(err, agent.ErrOverQuota):
		n.adm.penalise(from, quotaPenalty, n.now())
	}
	if errors.Is(err, errUnheardQuota) && n.adm.logDue(from.String(), n.now()) {
		// Said once a minute per relaying peer (the Sink says its own
		// quota's refusals per publisher): an honest relayer serving a
		// fresh mirror meets it until the hosts' heartbeats arrive.
		n.logger.Warn("refused listings of publishers this node does not hear, over the relaying peer's hourly allowance; they pass once their hosts' heartbeats arrive",
			"path", path, "from", from, "err", err, "raise", "--unheard-per-hour")
	}
	n.logger.Debug("refused network record", "path", path, "from", from, "reason", reason, "err", err)
}

// AdmissionPenalty is p's current admission penalty (what it loses in
// GossipSub's application score), for operators and tests.
func (n *Node) AdmissionPenalty(p peer.ID) float64 { return -n.adm.score(p, n.now()) }

// heartbeatGate is the intake as the heartbeat protocol sees it
// (heartbeat.Gate): the operator's blocks and the gater's, the
// forwarders' allowances, and refusals counted on path "heartbeat".
type heartbeatGate struct{ n *Node }

func (g heartbeatGate) Blocked(author peer.ID) bool {
	return g.n.gater.Blocked(author) || g.n.adm.blocked[author.String()]
}

func (g heartbeatGate) AllowRelayed(from peer.ID, now time.Time) bool {
	return g.n.adm.allowRelayedHeartbeat(from, g.n.cfg.HeartbeatInterval, now)
}

func (g heartbeatGate) Known(author peer.ID) bool { return g.n.knownPublisher(author) }

func (g heartbeatGate) Introduce(key string, from peer.ID, now time.Time) error {
	return g.n.adm.introduce(key, from, ipGroup(g.n.host.Network(), from), now)
}

func (g heartbeatGate) Heard(author string, now time.Time) { g.n.adm.hear(author, now) }

func (g heartbeatGate) Reject(from peer.ID, err error) { g.n.reject(pathHeartbeat, from, err) }

func (g heartbeatGate) Refuse(from peer.ID, err error) { g.n.refuse(pathHeartbeat, from, err) }

func (g heartbeatGate) Flood(from peer.ID) { g.n.refuse(pathHeartbeat, from, errFlood) }

func (g heartbeatGate) Late() { g.n.outdated(pathHeartbeat, errReplay) }
