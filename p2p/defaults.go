package p2p

import (
	"time"

	"github.com/agentsite/agentsite/p2p/catalogsync"
	"github.com/agentsite/agentsite/p2p/intake"
)

// The defaults of the settings the command line sets: cmd/agentsite's
// flags take them as their defaults, and the zero values of Config,
// Admission, DHTStoreLimits and SyncServeLimits mean them, so each number
// is written once, here.
const (
	// DefaultHeartbeatInterval is Config.HeartbeatInterval's default
	// (--heartbeat-interval): how often a node heartbeats while it hears
	// few nodes.
	DefaultHeartbeatInterval = 10 * time.Second
	// DefaultHeartbeatsPerInterval is Config.HeartbeatBudget's default
	// (--heartbeat-budget 0), in heartbeats per HeartbeatInterval: a
	// planet of up to this many nodes heartbeats at HeartbeatInterval; a
	// larger one waits longer, so every node receives about this many
	// heartbeats per interval.
	DefaultHeartbeatsPerInterval = 10
	// DefaultSyncInterval is Config.SyncInterval's default
	// (--sync-interval).
	DefaultSyncInterval = 30 * time.Second
	// DefaultPublisherRate is Admission.PublisherPerMinute's default
	// (--publisher-rate): fresh records of one publisher gossip may bring
	// a minute, twice what a node paces its own gossip to (pace.go).
	DefaultPublisherRate = intake.DefaultPublisherRate
	// DefaultUnheardPerHour is Admission.UnheardPerHour's default
	// (--unheard-per-hour).
	DefaultUnheardPerHour = intake.DefaultUnheardPerHour
	// DefaultDHTStoreBytes, DefaultDHTValuesPerPeer and
	// DefaultDHTValuesPerIPGroup are DHTStoreLimits' defaults
	// (--dht-store-mib, --dht-values-per-peer, --dht-values-per-ip-group).
	DefaultDHTStoreBytes       = 64 << 20
	DefaultDHTValuesPerPeer    = 256
	DefaultDHTValuesPerIPGroup = 1024
	// DefaultSyncServeRate and DefaultSyncServeBurst are SyncServeLimits'
	// defaults, in bytes (--sync-serve-rate, --sync-serve-burst, in MiB).
	// (p2p/catalogsync owns them.)
	DefaultSyncServeRate  = catalogsync.DefaultServeRate
	DefaultSyncServeBurst = catalogsync.DefaultServeBurst
)
