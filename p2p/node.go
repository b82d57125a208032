// Package p2p is AgentSite's network side: the libp2p host with the node's
// persistent identity, the Kademlia DHT (/agentsite prefix, validator
// "agent"), GossipSub topics for records and heartbeats, and connection
// gating; it runs the protocol packages (p2p/heartbeat, p2p/intake, and
// p2p/catalogsync for the catalogue sync). Verified records go to a Cache;
// p2p never imports the store.
package p2p

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	pubsub "github.com/libp2p/go-libp2p-pubsub"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	lpmetrics "github.com/libp2p/go-libp2p/core/metrics"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/routing"
	"github.com/libp2p/go-libp2p/p2p/host/resource-manager"
	"github.com/libp2p/go-libp2p/p2p/net/connmgr"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/p2p/catalogsync"
	"github.com/agentsite/agentsite/p2p/heartbeat"
	"github.com/agentsite/agentsite/p2p/intake"
)

// Topic names and protocol IDs (docs/architecture.md, "Protocols between nodes").
const (
	TopicRecords  = "agentsite/records/1"
	TopicStatus   = heartbeat.TopicStatus
	SyncProtocol  = catalogsync.SyncProtocol
	DHTPrefix     = "/agentsite"
	maxGossipSize = 64 << 10 // a record is ≤ 16 KiB; the library's default is 1 MiB
)

// TopicStatus2 carries heartbeats that say their interval and carry only
// the health that changed (p2p/heartbeat); TopicStatus stays for older
// nodes while any is heard.
const TopicStatus2 = heartbeat.TopicStatus2

// The heartbeat protocol's types that Config names, under their old
// names (p2p/heartbeat owns them).
type (
	// HealthSource returns the health of the agents this node hosts
	// (heartbeat.HealthSource).
	HealthSource = heartbeat.HealthSource
	// DomainClaims receives the domains other nodes claim in their
	// heartbeats (heartbeat.DomainClaims).
	DomainClaims = heartbeat.DomainClaims
	// HeartbeatBatcher is a Cache that records many heartbeats at once
	// (heartbeat.Batcher).
	HeartbeatBatcher = heartbeat.Batcher
)

// Config is the network configuration of a node.
type Config struct {
	// ListenAddrs are multiaddrs to listen on (TCP and QUIC).
	ListenAddrs []string
	// Bootstrap peers, full multiaddrs with /p2p/<id>.
	Bootstrap []string
	// UserAgent is announced through identify.
	UserAgent string
	// Version goes into heartbeats.
	Version string
	// NodeName is this node's name for people (--node-name), sent in
	// every heartbeat; "" sends none. agent.CheckNodeName must accept it.
	NodeName string
	// HeartbeatInterval is how often the node announces itself
	// (DefaultHeartbeatInterval) while the planet is small; it waits
	// longer as the planet grows (HeartbeatBudget).
	HeartbeatInterval time.Duration
	// HeartbeatBudget is how many heartbeats a second every node should
	// receive at most: each node's interval is the nodes heard divided by
	// it, never shorter than HeartbeatInterval nor longer than
	// agent.MaxHeartbeatInterval (0: 10 per HeartbeatInterval, 1/s at the
	// default interval).
	HeartbeatBudget float64
	// Cache receives verified records and serves sync; nil runs the host
	// only (no DHT, no gossip), as tools and some tests need.
	Cache Cache
	// Registerer receives the p2p metrics (nil: not exported).
	Registerer prometheus.Registerer
	// MaxSyncRecords bounds what one catalogue sync pulls from a peer.
	MaxSyncRecords int
	// NoSyncOnConnect turns off pulling each new peer's catalogue; the
	// cache then fills from gossip and on-demand look-ups only.
	NoSyncOnConnect bool
	// SyncInterval is how often a node pulls a connected peer's change
	// feed again (jittered ±25 %), so that a record lost in gossip is
	// repaired (DefaultSyncInterval): with more than syncFanout peers, each peer
	// is pulled every SyncInterval times peers/syncFanout, so that the node
	// still pulls about syncFanout feeds per SyncInterval (p2p/catalogsync/idle.go).
	SyncInterval time.Duration
	// HealthSource gives the health of the hosted agents for the
	// heartbeats (nil: none).
	HealthSource HealthSource
	// Domains gives the domains this node proved (agent/verify), sent in
	// every heartbeat (nil: none); Claims receives the domains other
	// nodes' heartbeats claim, to prove them itself (nil: ignored).
	// p2p/heartbeat/domains.go.
	Domains func() []string
	Claims  DomainClaims
	// Announce are addresses to advertise besides the ones the node
	// listens on, e.g. a port forwarded on the router
	// (/ip4/203.0.113.7/tcp/4001), without /p2p/<id>.
	Announce []string
	// NATPortMap asks the router for a port mapping (UPnP, NAT-PMP).
	NATPortMap bool
	// NoRelayService turns off the circuit relay v2 service that a node
	// offers while it is publicly reachable.
	NoRelayService bool
	// RelayResources overrides the relay service's limits (nil:
	// RelayResources()).
	RelayResources *relayv2.Resources
	// Admission is who may place listings here, and how many (block and
	// trust lists, quotas; zero: open, with the default quotas).
	Admission Admission
	// DHTStore bounds the DHT values held for other peers (zero: the
	// defaults).
	DHTStore DHTStoreLimits
	// SyncServe bounds what peers may pull from this node's catalogue
	// (p2p/catalogsync/serve.go; zero: the defaults).
	SyncServe SyncServeLimits
	// LinkDelay, for benchmarks and tests only (builds with -tags
	// agentsite_testnet; refused otherwise), is the round-trip time every
	// connection is given: a wide-area planet on one machine
	// (linkdelay.go). Zero: none.
	LinkDelay time.Duration
}

func (c *Config) defaults() {
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if c.HeartbeatBudget <= 0 {
		c.HeartbeatBudget = DefaultHeartbeatsPerInterval / c.HeartbeatInterval.Seconds()
	}
	if c.SyncInterval <= 0 {
		c.SyncInterval = DefaultSyncInterval
	}
	if c.MaxSyncRecords <= 0 {
		c.MaxSyncRecords = 200_000
	}
}

// Node is a running libp2p host with the DHT and GossipSub.
type Node struct {
	host    host.Host
	key     crypto.PrivKey
	logger  *slog.Logger
	cfg     Config
	gater   *Gater
	dht     *dht.IpfsDHT
	ps      *pubsub.PubSub
	records *pubsub.Topic
	status  *pubsub.Topic // agentsite/status/1
	status2 *pubsub.Topic // agentsite/status/2
	metrics *metrics
	seqs    *seqCache
	values  *dhtStore          // the DHT's bounded value store (nil: unbounded)
	in      *intake.Intake     // admission, quotas, strikes, penalties (p2p/intake)
	beat    *heartbeat.Service // the heartbeat protocol (p2p/heartbeat)
	traffic *lpmetrics.BandwidthCounter
	pace    *pace                // own records' gossip (pace.go)
	hosts   *heartbeat.Hosts     // publishers of the listings this node holds (p2p/heartbeat/hosts.go)
	catalog *catalogsync.Service // catalogue sync, client and server (p2p/catalogsync)
	dhtPub  *dhtPublisher        // own records' DHT puts, bounded (dhtpublish.go)
	scores  intake.Scores
	mcp     mcpState                  // MCP over libp2p: HTTP over streams for p2p/peermcp (mcp.go)
	hostp   atomic.Pointer[host.Host] // the host, for libp2p's own goroutines (autorelay's peer source)
	nat     natState
	now     func() time.Time
	started time.Time
	// withhold, set only by tests (WithholdGossip, -tags
	// agentsite_testnet), drops records by id from gossip on receipt.
	withhold atomic.Pointer[func(id string) bool]

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	ready  chan struct{}
}

// New starts a libp2p host with the given identity and, when cfg.Cache is
// set, the DHT, GossipSub, heartbeats and catalogue sync.
//
// ctx bounds the start only: if it ends before the node is up (Ctrl-C
// while a node starts), New closes what it started and returns ctx's
// error. Once New returns, the node runs on its own context until Close,
// whatever becomes of ctx.
func New(ctx context.Context, key crypto.PrivKey, cfg Config, logger *slog.Logger) (*Node, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("p2p start: %w", err)
	}
	cfg.defaults()
	for _, a := range cfg.ListenAddrs {
		if _, err := ma.NewMultiaddr(a); err != nil {
			return nil, fmt.Errorf("listen address %q is not a multiaddr (%w); use e.g. /ip4/0.0.0.0/tcp/0", a, err)
		}
	}
	boot, err := parseBootstrap(cfg.Bootstrap)
	if err != nil {
		return nil, err
	}
	n := &Node{key: key, logger: logger, cfg: cfg, gater: newGater(), now: time.Now, started: time.Now(), ready: make(chan struct{}), traffic: lpmetrics.NewBandwidthCounter()}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.metrics, err = newMetrics(cfg.Registerer, func() float64 { return float64(n.PeerCount()) })
	if err != nil {
		return nil, fmt.Errorf("p2p metrics: %w", err)
	}
	self, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("p2p identity: %w", err)
	}
	n.in = intake.New(intake.Config{
		Admission: cfg.Admission, Self: self,
		Rejected: n.metrics.rejected, Blocked: n.metrics.blocked,
		Block: func(p peer.ID) {
			n.gater.Block(p)
			go func() { _ = n.host.Network().ClosePeer(p) }()
		},
		Logger: logger, Now: func() time.Time { return n.now() },
	})
	n.seqs = newSeqCache(100_000)
	n.pace = newPace()
	n.hosts = heartbeat.NewHosts()
	for _, p := range cfg.Admission.Block {
		if id, err := peer.Decode(p); err == nil {
			n.gater.Block(id)
		}
	}

	cm, err := connmgr.NewConnManager(100, 400, connmgr.WithGracePeriod(time.Minute))
	if err != nil {
		return nil, fmt.Errorf("connection manager: %w", err)
	}
	limits := rcmgr.DefaultLimits
	libp2p.SetDefaultServiceLimits(&limits)
	// Without its metrics: they go to Prometheus' global registry, which
	// the node does not serve, and tracing every stream's scopes for them
	// cost a twentieth of a cross-node turn.
	rm, err := rcmgr.NewResourceManager(rcmgr.NewFixedLimiter(limits.AutoScale()), rcmgr.WithMetricsDisabled())
	if err != nil {
		return nil, fmt.Errorf("resource manager: %w", err)
	}
	transports := libp2p.DefaultTransports
	if link, err := linkOptions(cfg.LinkDelay); err != nil {
		n.cancel()
		return nil, err
	} else if link != nil {
		transports = libp2p.ChainOptions(link...)
	}
	opts := []libp2p.Option{
		libp2p.Identity(key),
		libp2p.ListenAddrStrings(cfg.ListenAddrs...),
		libp2p.DefaultSecurity, // Noise and TLS
		transports,
		libp2p.ConnectionManager(cm),
		libp2p.ResourceManager(rm),
		libp2p.ConnectionGater(n.gater),
		libp2p.UserAgent(cfg.UserAgent),
		libp2p.DisableMetrics(),
		libp2p.BandwidthReporter(n.traffic),
	}
	natOpts, err := n.natOptions(cfg, boot)
	if err != nil {
		n.cancel()
		return nil, err
	}
	opts = append(opts, natOpts...)
	if cfg.Cache != nil {
		opts = append(opts, libp2p.Routing(func(h host.Host) (routing.PeerRouting, error) {
			values, err := n.dhtValueOptions(h) // the bounded value store (dhtstore.go)
			if err != nil {
				return nil, err
			}
			d, err := dht.New(h, append(values,
				// A server while reachability is unknown (a LAN, a
				// test), a client once AutoNAT says the node is
				// private, so nobody's routing table fills with
				// addresses they cannot dial; a server again once
				// public.
				dht.Mode(dht.ModeAutoServer),
				dht.ProtocolPrefix(DHTPrefix),
				dht.NamespacedValidator(dhtNamespace, recordValidator{now: n.now, metrics: n.metrics}),
				dht.BootstrapPeers(boot...),
			)...)
			n.dht = d
			return d, err
		}))
	}
	h, err := libp2p.New(opts...)
	if err != nil {
		n.cancel()
		return nil, fmt.Errorf("start libp2p host: %w", err)
	}
	n.host = h
	n.hostp.Store(&h)
	n.beat = heartbeat.New(heartbeat.Config{
		Interval: cfg.HeartbeatInterval, Budget: cfg.HeartbeatBudget,
		Version: cfg.Version, NodeName: cfg.NodeName,
		Health: cfg.HealthSource, Domains: cfg.Domains, Claims: cfg.Claims,
		Store: cfg.Cache, Gate: heartbeatGate{n}, Hosts: n.hosts,
		Self: h.ID(), Addrs: n.Addrs,
		Received: n.metrics.heartbeats, Logger: logger, Now: func() time.Time { return n.now() },
	})
	if n.catalog, err = catalogsync.New(n.ctx, catalogsync.Config{
		Host: h, Node: syncHost{n}, Cache: cfg.Cache, Intake: n.in,
		MaxSyncRecords: cfg.MaxSyncRecords, SyncInterval: cfg.SyncInterval, HeartbeatInterval: cfg.HeartbeatInterval,
		Serve: cfg.SyncServe, Registerer: cfg.Registerer, Logger: logger, Now: func() time.Time { return n.now() },
	}); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("p2p metrics: %w", err)
	}
	if err := n.watchNAT(); err != nil {
		_ = n.Close()
		return nil, err
	}
	if err := n.registerNATMetrics(cfg.Registerer); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("p2p metrics: %w", err)
	}
	if err := ctx.Err(); err != nil { // the host is up: the slow part of the start is over
		_ = n.Close()
		return nil, fmt.Errorf("p2p start: %w", err)
	}
	n.goLoop(func(ctx context.Context) { n.keepBootstrapped(ctx, boot) })
	if n.dht != nil {
		n.dhtPub = newDHTPublisher(n.putDHT, n.provideTag, func() time.Time { return n.now() },
			func() { n.metrics.published.WithLabelValues("dht_put", "dropped").Inc() })
		for range dhtWorkers {
			n.goLoop(n.dhtPub.run)
		}
	}
	if cfg.Cache == nil {
		close(n.ready)
		return n, nil
	}
	n.goLoop(n.beat.StartQueue()) // before the read loops that fill it
	if err := n.startPubSub(); err != nil {
		_ = n.Close()
		return nil, err
	}
	n.catalog.Serve()
	if !cfg.NoSyncOnConnect {
		n.catalog.WatchPeers()
	}
	for _, loop := range n.beat.Start(n.status, n.status2) {
		n.goLoop(loop)
	}
	n.goLoop(func(ctx context.Context) { n.bootstrap(ctx, boot) })
	return n, nil
}

func parseBootstrap(addrs []string) ([]peer.AddrInfo, error) {
	var out []peer.AddrInfo
	for _, a := range addrs {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			return nil, fmt.Errorf("bootstrap address %q is not a multiaddr (%w); copy one from another node's /nodes page", a, err)
		}
		info, err := peer.AddrInfoFromP2pAddr(m)
		if err != nil {
			return nil, fmt.Errorf("bootstrap address %q must end in /p2p/<peer id> (%w)", a, err)
		}
		out = append(out, *info)
	}
	return out, nil
}

// bootstrap connects to the bootstrap peers (retrying with backoff until at
// least one answers) and then bootstraps the DHT.
func (n *Node) bootstrap(ctx context.Context, boot []peer.AddrInfo) {
	defer close(n.ready)
	backoff := 250 * time.Millisecond
	for len(boot) > 0 {
		ok := 0
		for _, pi := range boot {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := n.host.Connect(cctx, pi)
			cancel()
			if err != nil {
				n.logger.Warn("bootstrap peer unreachable; will retry", "peer", pi.ID, "err", err)
				continue
			}
			ok++
		}
		if ok > 0 || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 30*time.Second)
	}
	if n.dht != nil {
		if err := n.dht.Bootstrap(ctx); err != nil && ctx.Err() == nil {
			n.logger.Warn("DHT bootstrap failed", "err", err)
		}
	}
}

func (n *Node) goLoop(f func(context.Context)) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f(n.ctx)
	}()
}

// Host is the underlying libp2p host.
func (n *Node) Host() host.Host { return n.host }

// DHT is the node's Kademlia DHT (nil without a cache).
func (n *Node) DHT() *dht.IpfsDHT { return n.dht }

// Gater is the node's connection gater.
func (n *Node) Gater() *Gater { return n.gater }

// PeerID is this node's peer ID as a string.
func (n *Node) PeerID() string { return n.host.ID().String() }

// Addrs returns the node's full multiaddrs (with /p2p/<id>), sorted, so
// others can bootstrap from it.
func (n *Node) Addrs() []string {
	info := peer.AddrInfo{ID: n.host.ID(), Addrs: n.host.Addrs()}
	full, err := peer.AddrInfoToP2pAddrs(&info)
	if err != nil {
		return nil
	}
	out := make([]string, 0, len(full))
	for _, a := range full {
		out = append(out, a.String())
	}
	sort.Strings(out)
	return out
}

// PeerCount is the number of connected peers.
func (n *Node) PeerCount() int { return len(n.host.Network().Peers()) }

// Ready reports whether the host is listening and the first bootstrap round
// is over.
func (n *Node) Ready() bool {
	select {
	case <-n.ready:
		return len(n.host.Addrs()) > 0
	default:
		return false
	}
}

// Traffic is the bytes the host received and sent since it started, every
// protocol together: what a node costs the network (the idle benchmark,
// BenchmarkIdlePlanet, reads it).
func (n *Node) Traffic() (in, out int64) {
	t := n.traffic.GetBandwidthTotals()
	return t.TotalIn, t.TotalOut
}

// TrafficByProtocol is Traffic per protocol (bytes in and out together),
// for the idle benchmark's breakdown.
func (n *Node) TrafficByProtocol() map[string]int64 {
	out := map[string]int64{}
	for p, s := range n.traffic.GetBandwidthByProtocol() {
		out[string(p)] = s.TotalIn + s.TotalOut
	}
	return out
}

// Close stops every loop, the DHT and the host.
func (n *Node) Close() error {
	n.cancel()
	n.wg.Wait()
	var errs []error
	if n.records != nil {
		_ = n.records.Close()
	}
	if n.status2 != nil {
		_ = n.status2.Close()
	}
	if n.status != nil {
		_ = n.status.Close()
	}
	if n.dht != nil {
		errs = append(errs, n.dht.Close())
	}
	errs = append(errs, n.host.Close())
	return errors.Join(errs...)
}

// ConnectedPeers is the peer ids this node is connected to now, sorted
// (the network page draws them).
func (n *Node) ConnectedPeers() []string {
	ps := n.host.Network().Peers()
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	sort.Strings(out)
	return out
}
