// Package intake is who may place listings and heartbeats in this node,
// and what a refusal costs the peer that sent it (docs/architecture.md
// "Peers are adversaries"): the operator's block and trust lists, the
// quotas per publisher, per relaying peer and per IP group, the hourly
// allowance of never-heard publishers, strikes for invalid records, and
// the penalties and score parameters that feed GossipSub's peer score.
// "Why was this listing refused?" is answered here: Reason names every
// refusal as the metric agentsite_p2p_records_rejected_total counts it.
//
// The host (package p2p) asks it about each record it verified (Admit,
// AllowGossip) and tells it what it heard (Hear); it knows nothing of
// connections: the host passes a peer's IP group, and Config.Block closes
// the door on a peer out of strikes. This package never imports p2p.
package intake

import (
	"errors"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
)

// Config is what an Intake runs with.
type Config struct {
	// Admission is the operator's policy and the quotas (zero: open,
	// with the default quotas).
	Admission Admission
	// Self is this node's peer id: its own records pass, and it is never
	// struck.
	Self peer.ID
	// Rejected counts refusals by path and Reason
	// (agentsite_p2p_records_rejected_total); Blocked counts peers
	// blocked for strikes (nil: not counted).
	Rejected *prometheus.CounterVec
	Blocked  prometheus.Counter
	// Block closes the door on a peer out of strikes (the gater, and its
	// connections); nil: nothing.
	Block  func(peer.ID)
	Logger *slog.Logger
	Now    func() time.Time
}

// Intake is one node's admission state.
type Intake struct {
	cfg      Config
	adm      *admission
	strikes  *strikes
	overflow *overflow // peers' own records over the rate let pass unpunished (overflow.go)
}

// New makes the state of cfg's policy.
func New(cfg Config) *Intake {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rejected == nil {
		cfg.Rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "records_rejected_total"}, []string{"path", "reason"})
	}
	if cfg.Blocked == nil {
		cfg.Blocked = prometheus.NewCounter(prometheus.CounterOpts{Name: "peers_blocked_total"})
	}
	adm := newAdmission(cfg.Admission)
	return &Intake{cfg: cfg, adm: adm, strikes: newStrikes(), overflow: newOverflow(adm.cfg.PublisherPerMinute)}
}

// Admit runs the admission of a verified record that from (of IP group
// group, "" when not known) relayed, and counts it against from's
// allowance (admission.check).
func (in *Intake) Admit(rec *agent.Record, from peer.ID, group string) error {
	return in.adm.check(rec, from, group, in.cfg.Self.String(), in.cfg.Now())
}

// Policy is the operator's part of admission alone (block list,
// TrustedOnly), for a record no peer relayed (a DHT look-up).
func (in *Intake) Policy(publisher string) error {
	return in.adm.policy(publisher, in.cfg.Self.String())
}

// AllowGossip applies the gossip rates to a record of publisher that from
// forwarded, and counts a refusal: past its rate a forwarder's messages,
// and a publisher's fresh records, are ignored (not forwarded). A
// forwarder over its own message rate loses score. A publisher's own
// valid records past the publisher rate cost it nothing up to an
// allowance (overflow): an honest node paces its own gossip below the
// rate and the rest reach peers by sync, but its records can still arrive
// in a clump; graylisting it for that cut it off both ways, heartbeats
// included. A burst far past the rate, which no pacing node sends, still
// costs a point a record.
func (in *Intake) AllowGossip(path string, from peer.ID, publisher string) bool {
	now := in.cfg.Now()
	relayOK, pubOK := in.adm.allowGossip(from, publisher, now)
	if relayOK && pubOK {
		return true
	}
	switch {
	case !relayOK:
		in.Refuse(path, from, ErrFlood)
	case from.String() == publisher && !in.overflow.forgive(publisher, now):
		in.Refuse(path, from, ErrFlood)
	default:
		in.cfg.Rejected.WithLabelValues(path, Reason(ErrFlood)).Inc()
	}
	return false
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

// Refuse counts a valid record that admission refused and lowers the
// relaying peer's score for quota and rate breaches (not for the
// operator's block and trust lists: honest peers relay those).
func (in *Intake) Refuse(path string, from peer.ID, err error) {
	reason := Reason(err)
	in.cfg.Rejected.WithLabelValues(path, reason).Inc()
	now := in.cfg.Now()
	switch {
	case errors.Is(err, ErrFlood):
		in.adm.penalise(from, floodPenalty, now)
	case errors.Is(err, agent.ErrOverQuota):
		in.adm.penalise(from, quotaPenalty, now)
	}
	if errors.Is(err, ErrUnheardQuota) && in.adm.logDue(from.String(), now) {
		// Said once a minute per relaying peer (the Sink says its own
		// quota's refusals per publisher): an honest relayer serving a
		// fresh mirror meets it until the hosts' heartbeats arrive.
		in.cfg.Logger.Warn("refused listings of publishers this node does not hear, over the relaying peer's hourly allowance; they pass once their hosts' heartbeats arrive",
			"path", path, "from", from, "err", err, "raise", "--unheard-per-hour")
	}
	in.cfg.Logger.Debug("refused network record", "path", path, "from", from, "reason", reason, "err", err)
}

// Reject counts a bad record and, past a few strikes, blocks the peer
// that sent it (Config.Block).
func (in *Intake) Reject(path string, from peer.ID, err error) {
	reason := Reason(err)
	in.cfg.Rejected.WithLabelValues(path, reason).Inc()
	in.cfg.Logger.Debug("rejected network record", "path", path, "from", from, "reason", reason, "err", err)
	if from == "" || from == in.cfg.Self {
		return
	}
	if in.strikes.add(from, in.cfg.Now()) {
		in.cfg.Blocked.Inc()
		in.cfg.Logger.Warn("blocking peer that keeps sending invalid records", "peer", from, "last_reason", reason)
		if in.cfg.Block != nil {
			in.cfg.Block(from)
		}
	}
}

// Outdated counts a genuine record older than one already seen (reason
// "replay"). It is dropped, but it is no strike: a peer that missed an update
// (across a partition, or because updates overtook each other) serves or
// forwards the older version in good faith, and the seq rule keeps it out of
// the cache whoever sent it.
func (in *Intake) Outdated(path string, err error) {
	in.cfg.Rejected.WithLabelValues(path, Reason(err)).Inc()
}

// Blocked reports whether the operator blocked publisher.
func (in *Intake) Blocked(publisher string) bool { return in.adm.blocked[publisher] }

// Hear notes a verified heartbeat of author: its listings are a heard
// host's.
func (in *Intake) Hear(author string, now time.Time) { in.adm.hear(author, now) }

// WasHeard reports whether a heartbeat of p was heard within the hour.
func (in *Intake) WasHeard(p string, now time.Time) bool { return in.adm.wasHeard(p, now) }

// AllowRelayedHeartbeat charges one heartbeat forwarded by from to its
// rate (per interval, twice the authors heard plus 64).
func (in *Intake) AllowRelayedHeartbeat(from peer.ID, interval time.Duration, now time.Time) bool {
	return in.adm.allowRelayedHeartbeat(from, interval, now)
}

// Introduce charges key (a never-heard heartbeat author, a domain claim)
// to the hourly introduction allowance of from and of its IP group.
func (in *Intake) Introduce(key string, from peer.ID, group string, now time.Time) error {
	return in.adm.introduce(key, from, group, now)
}

// Score is p's application-specific GossipSub score: minus its penalty.
func (in *Intake) Score(p peer.ID) float64 { return in.adm.score(p, in.cfg.Now()) }
