package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/p2p/peermcp"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/storeopen"
)

// keyFile is the node key's file name inside the data dir.
const keyFile = "node.key"

// app is one node's services, each built once, in dependency order, by
// buildApp: the composition root. `serve` puts them on HTTP (Main.Run);
// `import` registers through the same key, store and registry, offline.
type app struct {
	cfg    Config
	logger *slog.Logger

	key    crypto.PrivKey
	peerID string
	newKey bool // the key was created by this start

	// The store stack: engine is the database (engineName says which);
	// network is its network view behind the search index and the read
	// cache, full the whole store for the surfaces; sink is the one
	// road every listing takes into the store, local or from the network.
	engine      store.Store
	engineName  string
	network     store.Network
	full        store.Store
	indexStatus func() (state, errKind string) // nil: no search index
	sink        *store.Sink

	node      *p2p.Node // nil offline
	publisher *p2p.Publisher
	runtime   *runtime.Runtime
	health    *registry.Health
	prober    *registry.Prober
	registry  *registry.Registry
	chat      *chat.Chat
	live      *chat.Live
	discover  *discover.Discover // every surface's searches and DHT rounds
	peers     *peermcp.Client    // turns to agents other nodes host

	// lifetime ends at shutdown's first step (endLifetime): chat sockets
	// get a close frame, live turns and A2A tasks end.
	lifetime    context.Context
	endLifetime context.CancelFunc
	// loops is the background work's context (the search index, refresh,
	// sweep, probes), ended by close.
	loops     context.Context
	stopLoops context.CancelFunc
	looping   bool             // some background work was started
	usage     *uses            // counts the week's conversations for the heartbeats; nil with a test's health source
	verify    *verification    // this node's domains and other nodes' claims (verify.go)
	outbound  runtime.Outbound // what each purpose of outbound calls may reach
	wg        sync.WaitGroup
}

// appDeps is what buildApp takes besides the flags.
type appDeps struct {
	Logger *slog.Logger
	// Metrics receives the store, search index, p2p, probe and model
	// scheduler metrics; nil: none (import).
	Metrics prometheus.Registerer
	// Offline builds the key, the store (the engine alone) and the
	// registry only: no network, runtime or chat (import).
	Offline bool
	// HealthSource, when set, is where heartbeats take this node's agent
	// health from in place of its own probes (tests).
	HealthSource p2p.HealthSource
	// LinkDelay is p2p.Config.LinkDelay (benchmarks and tests).
	LinkDelay time.Duration
	// VerifyHTTPSPort, for tests only, is the port HTTPS proofs are
	// fetched from (0: 443).
	VerifyHTTPSPort int
	// OutboundTestAllow, for tests only, is runtime.Outbound.TestAllow:
	// endpoints on loopback every outbound purpose may reach.
	OutboundTestAllow runtime.AllowList
}

// buildApp builds a node's services from cfg: open the store, start p2p,
// build the use cases, close the delegation loop, serve other nodes'
// turns. ctx bounds the start and is the parent of the background work.
// On error, what was started is closed again.
func buildApp(ctx context.Context, cfg Config, deps appDeps) (_ *app, err error) {
	a := &app{cfg: cfg, logger: deps.Logger, outbound: cfg.outbound()}
	a.outbound.TestAllow = deps.OutboundTestAllow
	a.loops, a.stopLoops = context.WithCancel(ctx)
	a.lifetime, a.endLifetime = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			_, _ = a.close()
		}
	}()
	if err := a.openStore(ctx, deps); err != nil {
		return nil, err
	}
	if deps.Offline {
		a.publisher = p2p.NewPublisher(a.key, a.sink)
		a.registry = newRegistry(cfg, a.engine, a.publisher, nil, nil, a.peerID, a.logger)
		return a, nil
	}
	// Health comes first: the heartbeats carry it from the node's start.
	a.health = registry.NewHealth(healthOptions(cfg.ProbeInterval))
	if err := a.buildVerify(deps.VerifyHTTPSPort); err != nil {
		return nil, err
	}
	// A proved domain is evidence for quotas and eviction (store.Sink);
	// nothing writes through the sink before p2p starts.
	a.sink.Verified = func(p string) bool { return len(a.verify.Domains(p)) > 0 }
	if err := a.startP2P(ctx, deps); err != nil {
		return nil, err
	}
	if err := a.buildUseCases(deps.Metrics); err != nil {
		return nil, err
	}
	closeDelegationLoop(a.runtime, a.chat)
	if err := a.servePeers(); err != nil {
		return nil, err
	}
	return a, nil
}

// openStore loads the node key and opens the store stack: the engine
// (every call under --store-timeout, in the store metrics), then, on a
// running node, the search index and the read cache in front of it; and
// the Sink.
func (a *app) openStore(ctx context.Context, deps appDeps) error {
	if err := prepareDataDir(a.cfg.DataDir); err != nil {
		return err
	}
	key, created, err := p2p.LoadOrCreateKey(filepath.Join(a.cfg.DataDir, keyFile))
	if err != nil {
		return err
	}
	self, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return fmt.Errorf("peer id: %w", err)
	}
	a.key, a.peerID, a.newKey = key, self.String(), created
	opts := store.Options{Timeout: a.cfg.StoreTimeout}
	if deps.Metrics != nil {
		opts.Metrics = store.NewMetrics(deps.Metrics)
	}
	st, engine, err := storeopen.OpenWith(ctx, a.cfg.DatabaseURL, a.cfg.DataDir, a.logger, opts)
	if err != nil {
		return err
	}
	a.engine, a.engineName = st, engine
	if deps.Offline { // an import writes straight to the engine: nothing searches meanwhile
		a.network, a.full = st, st
	} else {
		a.network, a.full = cachedStore(a.searchIndex(st, deps.Metrics), deps.Metrics)
	}
	a.sink = &store.Sink{Store: a.network, SelfID: a.peerID, MaxPerPublisher: a.cfg.MaxPerPublisher,
		QuotaDoubling: a.cfg.quotaDoubling(), Logger: a.logger, Capacity: a.capacity(a.network, deps.Metrics)}
	return nil
}

// The node's Sink serves own pages (p2p/catalogsync/own.go): without the method
// the node would silently stop answering them.
var _ p2p.OwnCache = (*store.Sink)(nil)

// startP2P starts the libp2p node on the sink, its heartbeats carrying
// this node's agent health, and the publisher that signs with its key and
// announces on it.
func (a *app) startP2P(ctx context.Context, deps appDeps) error {
	if len(a.cfg.TestPublicCIDRs) > 0 {
		if err := p2p.TreatAsPublic(a.cfg.TestPublicCIDRs); err != nil {
			return err
		}
		a.logger.Warn("tests only: counting these prefixes as public addresses", "cidrs", a.cfg.TestPublicCIDRs)
	}
	pc := a.cfg.p2pConfig()
	pc.Cache, pc.Registerer, pc.HealthSource = a.sink, deps.Metrics, deps.HealthSource
	pc.LinkDelay = deps.LinkDelay
	pc.Domains, pc.Claims = a.verify.own.Verified, a.claimsSink()
	pc.Admission.Verified = a.verify.Domains
	if pc.HealthSource == nil { // a test's own source wins
		// The tracker's snapshot, shared between rounds while no summary
		// changed: p2p only reads it.
		pc.HealthSource = func() map[string]agent.Health { m, _ := a.health.Snapshot(); return m }
		if c, ok := a.engine.(conversationCounter); ok { // the week's conversations ride along
			a.usage = &uses{counter: c, every: a.cfg.UsesInterval, now: time.Now, logger: a.logger}
			pc.HealthSource = a.usage.source(a.health.Snapshot)
		}
	}
	node, err := p2p.New(ctx, a.key, pc, a.logger)
	if err != nil {
		return err
	}
	a.node = node
	a.logger.Info("node identity", "peer_id", node.PeerID(), "new_key", a.newKey, "store", a.engineName)
	a.publisher = node.Publisher(a.sink)
	return nil
}

// buildUseCases builds the agent runtime, the registry, chat (local
// agents answer through the runtime, remote ones through their hosts
// over MCP on libp2p), live turns and the prober.
func (a *app) buildUseCases(metrics prometheus.Registerer) error {
	models, err := newModelScheduler(a.cfg, metrics)
	if err != nil {
		return fmt.Errorf("model scheduler metrics: %w", err)
	}
	a.runtime = runtime.NewRuntime(backendLookup(a.full), runtime.RuntimeOptions{
		AllowPrivate:  a.cfg.AllowPrivateEndpoints,
		Allow:         a.outbound.Policy(runtime.PurposeBackend).Allow,
		UserAgent:     "AgentSite/" + buildVersion(),
		Logger:        a.logger,
		EchoDelay:     a.cfg.EchoDelay,
		Conformance:   a.cfg.ConformanceAgent,
		Models:        models,
		HistoryTokens: a.cfg.LLMHistoryTokens,
	})
	// Agents with memory keep it in the store (docs/agents.md, "Memory").
	a.runtime.Memory = chat.Memories{Store: a.full}
	observer, err := newProbeMetrics(metrics)
	if err != nil {
		return fmt.Errorf("probe metrics: %w", err)
	}
	// The prober hears the registry's changes (its Schedule): it walks
	// every local agent only at start and once an hour.
	a.prober = &registry.Prober{Store: a.full, Runtime: a.runtime, Health: a.health,
		Interval: a.cfg.ProbeInterval, Budget: a.cfg.ProbeBudget, Observer: observer, Logger: a.logger}
	a.registry = newRegistry(a.cfg, a.registryStore(), a.publisher, a.node, a.prober, a.peerID, a.logger)
	a.peers = peermcp.NewClient(a.node, peermcp.ClientConfig{Logger: a.logger, Version: buildVersion()})
	var dht discover.Network // nil offline: searches answer from the mirror alone
	if a.node != nil {
		dht = a.node
	}
	a.discover = discover.New(discover.Deps{Catalogue: a.full, Network: dht, Finder: a.registry})
	a.chat = &chat.Chat{Store: a.full, Listings: a.registry, Local: a.runtime, Remote: a.peers,
		Search: a.discover, Outcomes: a.health, Users: a.full, Logger: a.logger,
		Hosts: &store.NodeLabels{Nodes: a.full, SelfID: a.peerID, SelfName: a.cfg.NodeName}}
	a.live = &chat.Live{Chat: a.chat, Lifetime: a.lifetime, Logger: a.logger}
	return nil
}

// newRegistry is this node's agents, the same for serve and import: its
// limits come from the flags they share (Config.declareShared). network
// is nil offline (the cache only), and so is sched (no prober).
func newRegistry(cfg Config, st registry.Store, pub registry.Publisher, network registry.Network, sched registry.Schedule, peerID string, logger *slog.Logger) *registry.Registry {
	return &registry.Registry{Store: st, Publisher: pub, Network: network, Schedule: sched, PeerID: peerID,
		TTL: cfg.RecordTTL, AllowPrivate: cfg.AllowPrivateEndpoints, AllowEndpoints: cfg.outbound().Allow, Logger: logger}
}

// batchingStore is the full store with the engine's transactions behind
// the read cache (store.Batcher) and its reads of many listings at once
// (store.AgentsGetter): what the registry's Batch needs to write a chunk
// in one transaction.
type batchingStore struct {
	store.Store
	store.Batcher
	store.AgentsGetter
}

// registryStore is the store the registry writes through: a.full, and
// on a running node the read cache's transactions too. Without them a
// bulk registration (POST /api/v1/agents:batch, `import --node`) wrote
// item by item, each with its own transactions: 40 items/s against an
// offline import's ~1,000 (BENCHMARKS.md, "Import through a running
// node").
func (a *app) registryStore() registry.Store {
	c, ok := a.network.(*store.Cache)
	if !ok {
		return a.full
	}
	b, ok := c.Batcher()
	if !ok {
		return a.full
	}
	return batchingStore{Store: a.full, Batcher: b, AgentsGetter: c}
}

// closeDelegationLoop closes the one cycle of the services: the runtime
// answers chat's turns for local agents, and agents that call agents go
// through chat again (hops, budget, routing to other nodes), so each
// needs the other.
func closeDelegationLoop(rt *runtime.Runtime, c *chat.Chat) { rt.Delegator = c }

// startBackground publishes the demo agents (--demo-agents) and the
// conformance agent (--conformance-agent), and starts
// the background work: re-signing local listings, the liveness sweep
// and the probes.
func (a *app) startBackground() error {
	if a.cfg.DemoAgents {
		if err := publishDemoAgents(a.loops, a.registry, a.logger); errors.Is(err, store.ErrStorageFull) {
			// A full disk: the node serves reads (the store logged where
			// to free space), and the demo agents wait for the next start.
			a.logger.Warn("demo agents not published: the disk is full", "err", err)
		} else if err != nil {
			return fmt.Errorf("publish demo agents: %w", err)
		}
	}
	if a.cfg.ConformanceAgent {
		if err := publishConformanceAgent(a.loops, a.registry); err != nil {
			return fmt.Errorf("publish the conformance agent: %w", err)
		}
	}
	a.goLoop(a.registry.RunRefresh)
	a.goLoop(a.sweepLoop)
	a.goLoop(a.prober.Run)
	if a.usage != nil {
		a.goLoop(a.usage.Run)
	}
	a.startVerify()
	return nil
}

func (a *app) goLoop(f func(context.Context)) {
	a.looping = true
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f(a.loops)
	}()
}

// close stops the services in reverse order: the background work, the
// peer clients (turns to other nodes end here), p2p, the runtime (nothing
// asks it any more), the store. It returns what it stopped.
func (a *app) close() (stopped []string, err error) {
	var errs []error
	a.endLifetime()
	a.stopLoops()
	a.wg.Wait()
	if a.looping {
		stopped = append(stopped, "background work")
		a.looping = false
	}
	for _, c := range []struct {
		name  string
		close func() error
		open  bool
	}{
		{"peer clients", func() error { return a.peers.Close() }, a.peers != nil},
		{"p2p", func() error { return a.node.Close() }, a.node != nil},
		{"runtime", func() error { return a.runtime.Close() }, a.runtime != nil},
		{"store", func() error { return a.engine.Close() }, a.engine != nil},
	} {
		if !c.open {
			continue
		}
		if err := c.close(); err != nil {
			errs = append(errs, fmt.Errorf("%s close: %w", c.name, err))
		}
		stopped = append(stopped, c.name)
	}
	a.peers, a.node, a.runtime, a.engine = nil, nil, nil, nil
	return stopped, errors.Join(errs...)
}
