package p2p

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Paths a record can arrive by, for the metrics.
const (
	pathGossip = "gossip"
	pathDHT    = "dht"
	pathSync   = "sync" // p2p/catalogsync labels its own the same
	// pathHeartbeat labels rejected heartbeats (agentsite/status/1).
	pathHeartbeat = "heartbeat"
)

// metrics counts what the network delivers and what it rejects, so an
// operator can see an attack in /metrics.
type metrics struct {
	accepted   *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	heartbeats prometheus.Counter
	published  *prometheus.CounterVec
	peers      prometheus.GaugeFunc
	blocked    prometheus.Counter
	// NAT (nat.go)
	holePunches *prometheus.CounterVec
	mcpStreams  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer, peerCount func() float64) (*metrics, error) {
	m := &metrics{
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "records_accepted_total",
			Help: "Verified records that changed the cache, by path (gossip, dht, sync).",
		}, []string{"path"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "records_rejected_total",
			Help: "Network records rejected, by path and reason (signature, key, expired, size, invalid, sender, malformed; replay: an older seq than one seen, dropped without penalty as honest peers that lag send those too). Path heartbeat counts heartbeats; there key is a health claim for an agent the sender does not host.",
		}, []string{"path", "reason"}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "heartbeats_received_total",
			Help: "Valid node heartbeats received.",
		}),
		published: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "publish_total",
			Help: "Publications of local records, by channel (gossip, dht_put, dht_provide) and result (ok, error; paced: over the node's own gossip pace, left to the sync; dropped: a DHT put that found its queue full, left to gossip, sync and the next re-sign).",
		}, []string{"channel", "result"}),
		peers: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "connected_peers",
			Help: "Currently connected libp2p peers.",
		}, peerCount),
		blocked: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "peers_blocked_total",
			Help: "Peers disconnected and blocked for repeatedly sending invalid records.",
		}),
		holePunches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "hole_punches_total",
			Help: "DCUtR hole punches this node took part in, by result (success, failure).",
		}, []string{"result"}),
		mcpStreams: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "p2p", Name: "mcp_streams_total",
			Help: "Streams this node opened to other nodes for MCP chat turns, by connection (direct, relayed).",
		}, []string{"conn"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.accepted, m.rejected, m.heartbeats, m.published, m.peers, m.blocked, m.holePunches, m.mcpStreams} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
