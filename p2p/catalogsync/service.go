// Package catalogsync is the catalogue sync protocol between AgentSite
// nodes (docs/architecture.md "Catalogue sync"): both versions,
// /agentsite/sync/1.0.0 (whole pulls, client.go) and /agentsite/sync/1.1.0
// (a cursor per peer in its change feed, feed.go, with own pages,
// own.go), the client and the server, the server's budgets per peer and
// IP group (serve.go), and what sync brought from each peer (peers.go,
// stats.go).
//
// The host (package p2p) owns the libp2p host, the record verification,
// the listing cache's delivery path and the background loops; it builds a
// Service with New, registers its stream handlers (Serve) and starts its
// peer watch (WatchPeers). What sync needs of the host comes through the
// Host interface; admission is the intake's (p2p/intake), taken as is.
// This package never imports p2p.
package catalogsync

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p/intake"
)

// Protocol IDs (docs/architecture.md, "Protocols between nodes").
const (
	// SyncProtocol is whole-catalogue sync, served for older nodes.
	SyncProtocol = "/agentsite/sync/1.0.0"
	// SyncFeedProtocol is incremental catalogue sync, served next to
	// SyncProtocol (1.0.0) for older nodes.
	SyncFeedProtocol = "/agentsite/sync/1.1.0"
)

// pathSync labels sync's refusals and deliveries in the host's metrics.
const pathSync = "sync"

// maxTracked bounds the per-peer maps (sync, serving), as the intake's
// (intake.MaxTracked).
const maxTracked = intake.MaxTracked

// FeedCache is what incremental catalogue sync (feed.go) needs: the
// cache's change feed to serve, and where this node got to in each peer's,
// kept across restarts (store.Sink implements it).
type FeedCache interface {
	// FeedID names the cache's change feed; a cursor in one feed means
	// nothing in another.
	FeedID(ctx context.Context) (string, error)
	// SyncChanges pages through the envelopes of the unexpired listings
	// (tombstones included) whose sync number (one per new envelope) is
	// above after and whose id is in [lo, hi) (hi "" is no bound), in that
	// order. next is the number to continue after; more says whether more
	// may follow now. limit 0 returns no envelopes and next = the feed's head (more:
	// not settled yet, numbers below it may still appear). A reader that
	// continues after next misses no change.
	SyncChanges(ctx context.Context, after int64, lo, hi string, limit int) (envs [][]byte, next int64, more bool, err error)
	// SyncCursor is where this node got to in peer's feed for shard
	// (feed "" when nowhere); complete says the shard was once read to
	// its end.
	SyncCursor(ctx context.Context, peer string, shard int) (feed string, after int64, complete bool, err error)
	// SetSyncCursor stores it.
	SetSyncCursor(ctx context.Context, peer string, shard int, feed string, after int64, complete bool) error
	// PruneSyncCursors drops the cursors not written since before.
	PruneSyncCursors(ctx context.Context, before time.Time) (int, error)
}

// Cache is what sync needs of the listing cache (p2p.Cache has it): pages
// to serve, for both protocols, and pages of records to take in one
// transaction. A Cache that is also an OwnCache serves own pages.
type Cache interface {
	FeedCache
	// PutAll stores a page of verified, admitted records as Put would
	// each, in one store transaction when the store runs them: envs[i] is
	// recs[i]'s envelope, and changed[i] and errs[i] are recs[i]'s
	// outcome. One record refused or failing changes nothing of the
	// others.
	PutAll(ctx context.Context, recs []*agent.Record, envs [][]byte) (changed []bool, errs []error)
	// Envelopes pages through the signed envelopes of unexpired listings
	// (tombstones included) in first-seen order after the position after,
	// optionally only those tagged tag. next is 0 on the last page (1.0.0).
	Envelopes(ctx context.Context, after int64, tag string, limit int) (envs [][]byte, next int64, err error)
}

// Host is what sync needs of the node that runs it (p2p's syncHost).
type Host interface {
	// Go runs f on the node's context until the node closes.
	Go(f func(context.Context))
	// Blocked reports whether p is blocked by the connection gater.
	Blocked(p peer.ID) bool
	// Verify opens and checks an envelope pulled by sync, as gossip's
	// are checked.
	Verify(env []byte, now time.Time) (*agent.Record, error)
	// CheckSeq fails when a higher seq of id was seen (the record is
	// outdated), and notes seq otherwise.
	CheckSeq(id string, seq uint64) error
	// Deliver counts what the cache did with rec, pulled from from
	// (PutAll's changed and err), as the node's delivery path does for
	// every path; it reports whether rec changed the cache.
	Deliver(ctx context.Context, from peer.ID, rec *agent.Record, changed bool, err error) bool
	// IPGroup is the IP group of p's connection ("" when none).
	IPGroup(p peer.ID) string
}

// Config is what a Service is built from.
type Config struct {
	// Host is the libp2p host streams are opened on and served from.
	Host host.Host
	// Node is the host's side (Host).
	Node Host
	// Cache serves pages and takes what is pulled.
	Cache Cache
	// Intake admits what is pulled and counts what is refused.
	Intake *intake.Intake
	// MaxSyncRecords bounds what one 1.0.0 sync pulls from a peer.
	MaxSyncRecords int
	// SyncInterval is how often a connected peer's feed is pulled again
	// (idle.go spreads it over the peers).
	SyncInterval time.Duration
	// HeartbeatInterval paces the retries of a sync that admission cut
	// short.
	HeartbeatInterval time.Duration
	// Serve bounds what peers may pull (zero fields: the defaults).
	Serve ServeLimits
	// Registerer receives the sync metrics (nil: not exported).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time
}

// Service is the catalogue sync of one node: its client loops, its
// server, and their state.
type Service struct {
	ctx     context.Context
	host    host.Host
	h       Host
	cfg     Config
	in      *intake.Intake
	logger  *slog.Logger
	now     func() time.Time
	syncs   *syncTracker
	serving *serveLimiter // the budgets of the peers served sync (serve.go)
	metrics syncMetrics
}

// New builds the sync of a node; it serves and syncs on ctx (the node's)
// until it ends.
func New(ctx context.Context, cfg Config) (*Service, error) {
	n := &Service{ctx: ctx, host: cfg.Host, h: cfg.Node, cfg: cfg, in: cfg.Intake, logger: cfg.Logger, now: cfg.Now,
		syncs: newSyncTracker(), metrics: newSyncMetrics()}
	var err error
	if n.serving, err = newServeLimiter(cfg.Serve, n.now, n.logger, cfg.Registerer); err != nil {
		return nil, fmt.Errorf("sync metrics: %w", err)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{n.metrics.requests, n.metrics.bytes, n.metrics.records} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("sync metrics: %w", err)
			}
		}
	}
	return n, nil
}

// Serve registers the handlers of both protocols on the host.
func (n *Service) Serve() {
	n.host.SetStreamHandler(SyncProtocol, n.serveSync)
	n.host.SetStreamHandler(SyncFeedProtocol, n.serveFeed)
}

// Hold notes that the node took env into its cache (or passed it over as
// older than one it has): a digest page need not bring it.
func (n *Service) Hold(env []byte) { n.syncs.hold(env) }
