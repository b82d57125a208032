// Package heartbeat is the node-liveness protocol between AgentSite nodes
// (docs/architecture.md "Heartbeats"): the rounds a node sends on
// agentsite/status/2 (and on agentsite/status/1 while older nodes are
// heard), the interval that grows with the planet, the validation of the
// rounds other nodes send (one round per sender per gap, the forwarders'
// allowances, health claims only for the sender's own agents), and the
// batched receipt writes.
//
// The host (package p2p) owns the libp2p host, GossipSub and the intake
// policy; it joins the topics, registers Service.Validate as their
// validator, hands every accepted message to Service.Handle and runs the
// loops Service.Start returns. What a heartbeat needs of the intake
// (blocks, allowances, strikes, the counters of refusals) comes through
// the Gate interface; what it needs of the listing cache through Store.
// This package never imports p2p.
package heartbeat

import (
	"context"
	"log/slog"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
)

// Topic names (docs/architecture.md, "Protocols between nodes").
const (
	// TopicStatus carries heartbeats for older nodes, while any is heard.
	TopicStatus = "agentsite/status/1"
	// TopicStatus2 carries heartbeats that say their interval and carry
	// only the health that changed (rounds.go).
	TopicStatus2 = "agentsite/status/2"
)

// Store is what the heartbeats need of the node's listing cache (p2p.Cache
// has it): the hosted count and names for this node's rounds, and the
// receipts of other nodes' rounds. A Store that is also a Batcher takes
// the receipts in batches (heard.go).
type Store interface {
	// NodeSeen records a verified heartbeat: the node is online, and so
	// are the listings it hosts.
	NodeSeen(ctx context.Context, hb agent.Heartbeat) error
	// LocalCount counts the agents this node hosts.
	LocalCount(ctx context.Context) (int, error)
	// LocalNames is the names of those of ids that this node hosts.
	LocalNames(ctx context.Context, ids []string) (map[string]string, error)
	// SetHealth records the health of agents hosted by hostPeerID.
	SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) error
}

// Gate is what the heartbeats need of the host's intake (p2p/intake, which
// p2p wraps in heartbeatGate): who is blocked, the forwarders'
// allowances, and the counting (and penalties) of what is refused. Every
// refusal is labelled path "heartbeat" by the host.
type Gate interface {
	// Blocked reports whether author, or its listings, are blocked by
	// the operator or for strikes.
	Blocked(author peer.ID) bool
	// AllowRelayed charges one heartbeat forwarded by from (not its
	// author) to from's rate; false: from is over it.
	AllowRelayed(from peer.ID, now time.Time) bool
	// Known reports whether this node hears author (a heartbeat within
	// the hour, a connection, or itself).
	Known(author peer.ID) bool
	// Introduce charges key (a never-heard author, a domain claim) to
	// from's hourly introduction allowance, and its IP group's.
	Introduce(key string, from peer.ID, now time.Time) error
	// Heard notes a heartbeat of author accepted at now.
	Heard(author string, now time.Time)
	// Reject counts an invalid heartbeat from from: a strike.
	Reject(from peer.ID, err error)
	// Refuse counts a valid heartbeat refused over an allowance, and
	// lowers from's score.
	Refuse(from peer.ID, err error)
	// Flood is Refuse for a sender over its message rate.
	Flood(from peer.ID)
	// Late counts a heartbeat dropped as late or as a replay: no penalty.
	Late()
}

// Config is what a Service runs with.
type Config struct {
	// Interval is how often the node heartbeats while the planet is
	// small (p2p.Config.HeartbeatInterval); Budget how many heartbeats a
	// second every node should receive at most (p2p.Config.HeartbeatBudget).
	Interval time.Duration
	Budget   float64
	// Version and NodeName go into every round.
	Version, NodeName string
	// Health gives the health of the hosted agents (nil: none).
	Health HealthSource
	// Domains gives the domains this node proved (nil: none); Claims
	// receives the domains other nodes' rounds claim (nil: ignored).
	Domains func() []string
	Claims  DomainClaims
	// Store is the listing cache; Gate the host's intake.
	Store Store
	Gate  Gate
	// Hosts is the publishers of the listings the node holds (the host
	// notes them as it takes listings in): they count in the planet's
	// size at once (nil: none).
	Hosts *Hosts
	// Self is this node's peer id; Addrs its full addresses, sorted.
	Self  peer.ID
	Addrs func() []string
	// Received counts valid heartbeats received (nil: not counted).
	Received prometheus.Counter
	Logger   *slog.Logger
	Now      func() time.Time
}

// Service is one node's side of the heartbeat protocol.
type Service struct {
	cfg    Config
	self   string
	logger *slog.Logger
	now    func() time.Time

	v1     *pubsub.Topic  // agentsite/status/1 (Start)
	hb     heartbeatState // agentsite/status/2: its topic, rounds and what was sent (rounds.go)
	beats  *beats         // rounds accepted per author on status/1
	heardq chan heard     // accepted heartbeats on their way to the store (heard.go; nil: written at once)
}

// New makes the protocol's state. It sends nothing and holds no queue
// until StartQueue and Start: without them (a node without a network,
// tests) rounds read the store themselves and receipts are written at
// once.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Received == nil {
		cfg.Received = prometheus.NewCounter(prometheus.CounterOpts{Name: "heartbeats_received_total"})
	}
	if cfg.Addrs == nil {
		cfg.Addrs = func() []string { return nil }
	}
	s := &Service{cfg: cfg, logger: cfg.Logger, now: cfg.Now, beats: newBeats()}
	if cfg.Self != "" {
		s.self = cfg.Self.String()
	}
	return s
}

// StartQueue makes the receipts' queue and returns the loop that writes
// it (heardLoop), for the host to run before the read loops that fill it.
func (s *Service) StartQueue() func(context.Context) {
	s.heardq = make(chan heard, heardQueue)
	return s.heardLoop
}

// Start takes the joined topics, makes the rounds read the state the
// keeper keeps, and returns the loops for the host to run: the keeper
// and the sender.
func (s *Service) Start(v1, v2 *pubsub.Topic) []func(context.Context) {
	s.v1 = v1
	s.hb.topic = v2
	s.hb.startKeeper()
	return []func(context.Context){s.heartbeatStateLoop, s.heartbeatLoop}
}

// OwnChanged notes that one of this node's records changed (published,
// updated, deleted): the hosted count is recounted off the rounds' path.
func (s *Service) OwnChanged() { s.hb.ownChanged() }

// Interval is the interval of this node's next round at now.
func (s *Service) Interval(now time.Time) time.Duration { return s.heartbeatInterval(now) }
