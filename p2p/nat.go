package p2p

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/event"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/libp2p/go-libp2p/p2p/host/autorelay"
	relayv2 "github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/relay"
	"github.com/libp2p/go-libp2p/p2p/protocol/holepunch"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/prometheus/client_golang/prometheus"
)

// Reachability values, as GET /api/v1/node and /nodes show them.
const (
	ReachabilityPublic  = "public"
	ReachabilityPrivate = "private"
	ReachabilityUnknown = "unknown"
)

// relayHop is the circuit relay v2 hop protocol a relay serves.
const relayHop = "/libp2p/circuit/relay/0.2.0/hop"

// RelayResources are the limits of the circuit relay v2 service a public
// node offers: few reservations, short and small circuits. Node-to-node
// MCP chat turns and catalogue pages are small; anything bigger waits for
// the direct connection hole punching makes.
func RelayResources() relayv2.Resources {
	r := relayv2.DefaultResources()
	r.MaxReservations = 128
	r.MaxCircuits = 8
	r.MaxReservationsPerIP = 8
	r.ReservationTTL = time.Hour
	r.Limit = &relayv2.RelayLimit{Duration: 2 * time.Minute, Data: 1 << 20} // per circuit and direction
	return r
}

// NATStatus is what the node knows of its own reachability.
type NATStatus struct {
	// Reachability is public, private or unknown (AutoNAT).
	Reachability string
	// RelayAddrs are this node's addresses through relays it holds a
	// reservation on (…/p2p/<relay>/p2p-circuit/p2p/<self>).
	RelayAddrs []string
	// DirectPeers and RelayedPeers count connected peers by whether any
	// connection to them is direct; a peer reached only through a relay
	// is relayed.
	DirectPeers  int
	RelayedPeers int
	// RelayService reports whether this node offers circuit relay v2 now
	// (it does when it is public, unless turned off).
	RelayService bool
}

// natState is the node's NAT side: its reachability as AutoNAT reports it
// and the hole punches it saw.
type natState struct {
	reach atomic.Int32 // network.Reachability
	mu    sync.Mutex
	first map[string]time.Time // first reservation, first direct connection to a peer reached by relay
}

// natOptions are the libp2p options for reachability, relays, hole
// punching, port mapping and announced addresses.
func (n *Node) natOptions(cfg Config, boot []peer.AddrInfo) ([]libp2p.Option, error) {
	var announce []ma.Multiaddr
	for _, a := range cfg.Announce {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			return nil, fmt.Errorf("announce address %q is not a multiaddr (%w); use e.g. /ip4/203.0.113.7/tcp/4001", a, err)
		}
		if _, err := m.ValueForProtocol(ma.P_P2P); err == nil {
			return nil, fmt.Errorf("announce address %q must not end in /p2p/<id>; the node adds its own", a)
		}
		announce = append(announce, m)
	}
	res := RelayResources()
	if cfg.RelayResources != nil {
		res = *cfg.RelayResources
	}
	opts := []libp2p.Option{
		// AutoNAT v1 decides the node's reachability (public, private) from
		// peers' dial-backs; its service answers others while this node is
		// not private. AutoNAT v2 checks each address on its own.
		libp2p.EnableNATService(),
		libp2p.AutoNATServiceRateLimit(60, 6, time.Minute),
		libp2p.EnableAutoNATv2(),
		// Private nodes reserve a slot on a relay among their peers and
		// bootstrap nodes and advertise the relayed address.
		libp2p.EnableRelay(),
		libp2p.EnableAutoRelayWithPeerSource(n.relayCandidates(boot),
			autorelay.WithMinCandidates(1),
			autorelay.WithNumRelays(2),
			autorelay.WithBootDelay(10*time.Second),
			autorelay.WithMinInterval(5*time.Second),
			autorelay.WithBackoff(15*time.Second)),
		// DCUtR turns relayed connections into direct ones.
		libp2p.EnableHolePunching(holepunch.WithTracer(holePunchTracer{n})),
	}
	if !cfg.NoRelayService {
		opts = append(opts, libp2p.EnableRelayService(relayv2.WithResources(res)))
	}
	if cfg.NATPortMap {
		opts = append(opts, libp2p.NATPortMap())
	}
	if len(announce) > 0 {
		opts = append(opts, libp2p.AddrsFactory(func(addrs []ma.Multiaddr) []ma.Multiaddr {
			return ma.Unique(append(slices.Clone(addrs), announce...))
		}))
	}
	return opts, nil
}

// relayCandidates is autorelay's peer source: the bootstrap peers first,
// then connected peers that serve the relay hop protocol.
func (n *Node) relayCandidates(boot []peer.AddrInfo) autorelay.PeerSource {
	return func(ctx context.Context, num int) <-chan peer.AddrInfo {
		out := make(chan peer.AddrInfo, num)
		defer close(out)
		hp := n.hostp.Load()
		if hp == nil {
			return out
		}
		h := *hp
		seen := map[peer.ID]bool{}
		add := func(pi peer.AddrInfo) {
			if len(out) >= num || seen[pi.ID] || pi.ID == h.ID() {
				return
			}
			seen[pi.ID] = true
			out <- pi
		}
		for _, pi := range boot {
			add(pi)
		}
		for _, p := range h.Network().Peers() {
			if ok, _ := h.Peerstore().SupportsProtocols(p, relayHop); len(ok) > 0 {
				add(h.Peerstore().PeerInfo(p))
			}
		}
		return out
	}
}

// watchNAT follows the node's reachability and relay addresses, for
// NATStatus, the metrics and the log.
func (n *Node) watchNAT() error {
	sub, err := n.host.EventBus().Subscribe([]any{new(event.EvtLocalReachabilityChanged), new(event.EvtAutoRelayAddrsUpdated)})
	if err != nil {
		return fmt.Errorf("watch reachability: %w", err)
	}
	n.goLoop(func(ctx context.Context) {
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-sub.Out():
				if !ok {
					return
				}
				switch e := ev.(type) {
				case event.EvtLocalReachabilityChanged:
					n.nat.reach.Store(int32(e.Reachability))
					n.logger.Info("reachability", "reachability", reachabilityName(e.Reachability))
				case event.EvtAutoRelayAddrsUpdated:
					if len(e.RelayAddrs) > 0 {
						n.noteFirst("reservation")
					}
					n.logger.Info("relay addresses", "addrs", len(e.RelayAddrs))
				}
			}
		}
	})
	return nil
}

// noteFirst logs the first time something happened since the node started.
func (n *Node) noteFirst(what string) {
	n.nat.mu.Lock()
	defer n.nat.mu.Unlock()
	if n.nat.first == nil {
		n.nat.first = map[string]time.Time{}
	}
	if _, ok := n.nat.first[what]; ok {
		return
	}
	now := time.Now()
	n.nat.first[what] = now
	n.logger.Info("first "+what, "after", now.Sub(n.started).Round(time.Millisecond).String())
}

func reachabilityName(r network.Reachability) string {
	switch r {
	case network.ReachabilityPublic:
		return ReachabilityPublic
	case network.ReachabilityPrivate:
		return ReachabilityPrivate
	default:
		return ReachabilityUnknown
	}
}

// Reachability is public, private or unknown.
func (n *Node) Reachability() string {
	return reachabilityName(network.Reachability(n.nat.reach.Load()))
}

// NAT reports the node's reachability, relay addresses and how its peers
// are connected.
func (n *Node) NAT() NATStatus {
	st := NATStatus{Reachability: n.Reachability(), RelayAddrs: n.RelayAddrs()}
	st.DirectPeers, st.RelayedPeers = n.PeerKinds()
	st.RelayService = !n.cfg.NoRelayService && st.Reachability == ReachabilityPublic &&
		slices.Contains(n.host.Mux().Protocols(), protocol.ID(relayHop))
	return st
}

// RelayAddrs are the node's full addresses through the relays it holds a
// reservation on (…/p2p/<relay>/p2p-circuit/p2p/<self>), sorted; empty,
// not nil, without any.
func (n *Node) RelayAddrs() []string {
	out := []string{}
	self := n.host.ID().String()
	for _, a := range n.host.Addrs() {
		if isRelayed(a) {
			out = append(out, a.String()+"/p2p/"+self)
		}
	}
	sort.Strings(out)
	return out
}

// PeerKinds counts connected peers with a direct connection and those
// reached through relays only.
func (n *Node) PeerKinds() (direct, relayed int) {
	for _, p := range n.host.Network().Peers() {
		if n.DirectTo(p) {
			direct++
		} else {
			relayed++
		}
	}
	return direct, relayed
}

// RelayedPeers is the peer ids this node is connected to only through a
// relay (no direct connection), sorted: the network page marks them.
func (n *Node) RelayedPeers() []string {
	var out []string
	for _, p := range n.host.Network().Peers() {
		if !n.DirectTo(p) {
			out = append(out, p.String())
		}
	}
	slices.Sort(out)
	return out
}

// DirectTo reports whether the node has a direct (not relayed) connection
// to p.
func (n *Node) DirectTo(p peer.ID) bool {
	for _, c := range n.host.Network().ConnsToPeer(p) {
		if !c.Stat().Limited && !isRelayed(c.RemoteMultiaddr()) {
			return true
		}
	}
	return false
}

func isRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// holePunchTracer logs DCUtR hole punches and counts them.
type holePunchTracer struct{ n *Node }

func (t holePunchTracer) Trace(evt *holepunch.Event) {
	e, ok := evt.Evt.(*holepunch.EndHolePunchEvt)
	if !ok {
		return
	}
	result := "failure"
	if e.Success {
		result = "success"
	}
	t.n.metrics.holePunches.WithLabelValues(result).Inc()
	t.n.logger.Info("hole punch finished", "peer", evt.Remote, "success", e.Success,
		"elapsed", e.EllapsedTime.Round(time.Millisecond).String(), "err", e.Error)
	if e.Success {
		t.n.noteFirst("direct connection")
	}
}

// limitedOK is the host as MCP over libp2p sees it: its streams may use
// limited (relayed) connections. Node-to-node MCP chat turns are small, so
// they go through a relay until hole punching gives a direct connection
// (libp2p then prefers that one). Each stream is counted by the kind of
// connection it took.
type limitedOK struct {
	host.Host
	n *Node
}

func (h limitedOK) NewStream(ctx context.Context, p peer.ID, pids ...protocol.ID) (network.Stream, error) {
	s, err := h.Host.NewStream(network.WithAllowLimitedConn(ctx, "agentsite MCP turn"), p, pids...)
	if err != nil {
		return nil, err
	}
	kind := "direct"
	if s.Conn().Stat().Limited {
		kind = "relayed"
	}
	h.n.metrics.mcpStreams.WithLabelValues(kind).Inc()
	return s, nil
}

// keepBootstrapped reconnects to the bootstrap peers whenever the node has
// lost all of them (a restarted bootstrap node, a network change), with
// backoff from 1 s to 30 s. Reservations on a restarted relay follow.
func (n *Node) keepBootstrapped(ctx context.Context, boot []peer.AddrInfo) {
	if len(boot) == 0 {
		return
	}
	select {
	case <-n.ready:
	case <-ctx.Done():
		return
	}
	wait := time.Second
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if slices.ContainsFunc(boot, func(pi peer.AddrInfo) bool {
			return n.host.Network().Connectedness(pi.ID) == network.Connected
		}) {
			wait = time.Second
			continue
		}
		ok := false
		for _, pi := range boot {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := n.host.Connect(cctx, pi)
			cancel()
			if err == nil {
				ok = true
				n.logger.Info("reconnected to a bootstrap peer", "peer", pi.ID)
				break
			}
		}
		if ok {
			wait = time.Second
		} else {
			wait = min(wait*2, 30*time.Second)
		}
	}
}

// registerNATMetrics exports the node's reachability, relay addresses and
// peers by connection kind.
func (n *Node) registerNATMetrics(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	reach := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "agentsite", Subsystem: "p2p", Name: "reachability",
		Help: "1 for this node's reachability as AutoNAT reports it (public, private, unknown), 0 for the others.",
	}, []string{"reachability"})
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "relay_addrs",
			Help: "This node's addresses through relays it holds a reservation on.",
		}, func() float64 { return float64(len(n.NAT().RelayAddrs)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "direct_peers",
			Help: "Connected peers with a direct connection.",
		}, func() float64 { d, _ := n.PeerKinds(); return float64(d) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "relayed_peers",
			Help: "Connected peers reached only through a relay.",
		}, func() float64 { _, r := n.PeerKinds(); return float64(r) }),
		reachCollector{vec: reach, n: n},
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// reachCollector sets the reachability gauges when scraped.
type reachCollector struct {
	vec *prometheus.GaugeVec
	n   *Node
}

func (c reachCollector) Describe(ch chan<- *prometheus.Desc) { c.vec.Describe(ch) }

func (c reachCollector) Collect(ch chan<- prometheus.Metric) {
	cur := c.n.Reachability()
	for _, r := range []string{ReachabilityPublic, ReachabilityPrivate, ReachabilityUnknown} {
		v := 0.0
		if r == cur {
			v = 1
		}
		c.vec.WithLabelValues(r).Set(v)
	}
	c.vec.Collect(ch)
}
