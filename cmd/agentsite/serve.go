package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/p2p/peermcp"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/storeopen"
)

// keyFile is the node key's file name inside the data dir.
const keyFile = "node.key"

// Main is a whole node: store, network, HTTP. End-to-end tests start nodes
// the same way the binary does: NewMain, ParseFlags (or set Config), Run,
// Close.
type Main struct {
	Config    Config
	LogOutput io.Writer
	// BcryptCost overrides the password hashing cost (tests use the minimum).
	BcryptCost int
	// HealthSource, when set before Run, is where the heartbeats take the
	// health of this node's agents from, in place of the node's own
	// probes: tests set it to report a health of their choosing.
	HealthSource p2p.HealthSource

	Logger    *slog.Logger
	Store     store.Store
	Node      *p2p.Node
	Publisher *p2p.Publisher
	Server    *handlers.Server
	Runtime   *runtime.Runtime
	Peers     *peermcp.Client // turns to agents other nodes host
	// Health is what this node has seen of its own agents' health (probes
	// and real turns); Health.Summaries() is what its heartbeat carries.
	Health *registry.Health
	// Prober probes the local agents every --probe-interval into Health.
	Prober *registry.Prober

	httpServer *http.Server
	listener   net.Listener
	// debugServer serves pprof on --debug-addr (nil when off).
	debugServer   *http.Server
	debugListener net.Listener
	cancel        context.CancelFunc
	wg            sync.WaitGroup
}

// NewMain returns a Main with default configuration.
func NewMain() *Main {
	m := &Main{LogOutput: os.Stderr}
	_ = m.Config.newFlagSet(io.Discard).Parse(nil)
	return m
}

// ParseFlags fills Config from args and the environment.
func (m *Main) ParseFlags(args []string, getenv func(string) string, out io.Writer) error {
	return m.Config.Parse(args, getenv, out)
}

// HTTPURL is the portal's base URL once Run has bound the listener.
func (m *Main) HTTPURL() string {
	if m.listener == nil {
		return ""
	}
	return "http://" + m.listener.Addr().String()
}

// Run opens the store, starts the network and the HTTP server, then returns;
// the node runs until Close.
func (m *Main) Run(ctx context.Context) error {
	if err := m.Config.Validate(); err != nil {
		return err
	}
	m.Logger = m.Config.newLogger(m.LogOutput)
	ctx, m.cancel = context.WithCancel(ctx)

	if err := prepareDataDir(m.Config.DataDir); err != nil {
		return err
	}
	key, created, err := p2p.LoadOrCreateKey(filepath.Join(m.Config.DataDir, keyFile))
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The engine gives every call the store deadline and records every
	// statement in the store metrics.
	st, engine, err := storeopen.OpenWith(ctx, m.Config.DatabaseURL, m.Config.DataDir, m.Logger,
		store.Options{Timeout: m.Config.StoreTimeout, Metrics: store.NewMetrics(reg)})
	if err != nil {
		return err
	}
	m.Store = st
	indexed, indexStatus := m.searchIndex(ctx, st, reg)
	network, full := cachedStore(indexed)
	selfID, err := peer.IDFromPrivateKey(key)
	if err != nil {
		return fmt.Errorf("peer id: %w", err)
	}
	sink := &store.Sink{Store: network, SelfID: selfID.String(), MaxPerPublisher: m.Config.MaxPerPublisher}
	if len(m.Config.TestPublicCIDRs) > 0 {
		if err := p2p.TreatAsPublic(m.Config.TestPublicCIDRs); err != nil {
			return err
		}
		m.Logger.Warn("tests only: counting these prefixes as public addresses", "cidrs", m.Config.TestPublicCIDRs)
	}
	node, err := p2p.New(ctx, key, p2p.Config{
		ListenAddrs:       m.Config.P2PListen,
		Bootstrap:         m.Config.Bootstrap,
		Announce:          m.Config.Announce,
		NATPortMap:        m.Config.NATPortMap,
		NoRelayService:    !m.Config.RelayService,
		UserAgent:         "agentsite/" + buildVersion(),
		Version:           buildVersion(),
		HeartbeatInterval: m.Config.HeartbeatInterval,
		NoSyncOnConnect:   !m.Config.SyncOnConnect,
		Cache:             sink,
		Registerer:        reg,
		HealthSource:      m.HealthSource,
		Admission:         m.Config.admission(),
		DHTStore:          m.Config.dhtStore(),
	}, m.Logger)
	if err != nil {
		return err
	}
	m.Node = node
	m.Logger.Info("node identity", "peer_id", node.PeerID(), "new_key", created, "store", engine)
	m.Publisher = p2p.NewPublisher(key, sink)
	m.Publisher.AnnounceWith(node)

	srv, err := handlers.New(full, node, m.Publisher, m.Logger, handlers.Config{
		Version:               buildVersion(),
		StorageFull:           storageFull(st),
		OperatorToken:         m.Config.OperatorToken,
		AllowPrivateEndpoints: m.Config.AllowPrivateEndpoints,
		SecureCookies:         m.Config.SecureCookies,
		BcryptCost:            m.BcryptCost,
		RecordTTL:             m.Config.RecordTTL,
		ChatRateLimit:         m.Config.ChatRateLimit,
		BodyTimeout:           m.Config.BodyTimeout,
		WriteTimeout:          m.Config.WriteTimeout,
		MaxSocketsPerClient:   m.Config.MaxSocketsPerIP,
		TrustedProxies:        m.Config.TrustedProxies,
		MetricsToken:          m.Config.MetricsToken,
		PublicURL:             m.Config.PublicURL,
		SearchIndexStatus:     indexStatus,
	}, reg)
	if err != nil {
		return fmt.Errorf("build HTTP handlers: %w", err)
	}
	m.Server = srv

	// Chat: local agents answer through the runtime; remote ones through
	// their hosts, over MCP on libp2p. Other nodes reach ours the same way.
	m.Runtime = runtime.NewRuntime(backendLookup(st), runtime.RuntimeOptions{
		AllowPrivate: m.Config.AllowPrivateEndpoints,
		UserAgent:    "AgentSite/" + buildVersion(),
		Logger:       m.Logger,
		EchoDelay:    m.Config.EchoDelay,
	})
	srv.Chat.Local = m.Runtime
	m.Runtime.Delegator = srv.Chat // agents that call agents go through the same chat path
	if err := m.startHealth(full, reg); err != nil {
		return err
	}
	if m.HealthSource == nil { // a test's own source wins
		node.SetHealthSource(m.Health.Summaries)
	}
	srv.UseHealth(m.Health, m.Prober)
	m.Peers = peermcp.NewClient(node, peermcp.ClientConfig{Logger: m.Logger, Version: buildVersion()})
	srv.Chat.Remote = m.Peers
	if err := node.ServeMCP(peermcp.NewHandler(peermcp.HandlerConfig{
		Agents:   hostedAgents{st: network},
		Answerer: chat.Measured{Answerer: m.Runtime, Outcomes: m.Health}, // their turns count for health too
		Detail:   runtime.PublicMessage,
		Allow:    peerTurnLimit(m.Config.ChatRateLimit),
		Logger:   m.Logger,
		Version:  buildVersion(),
	})); err != nil {
		return fmt.Errorf("serve MCP over libp2p: %w", err)
	}

	if m.Config.DemoAgents {
		if err := publishDemoAgents(ctx, srv); errors.Is(err, store.ErrStorageFull) {
			// A full disk: the node serves reads (the store logged where
			// to free space), and the demo agents wait for the next start.
			m.Logger.Warn("demo agents not published: the disk is full", "err", err)
		} else if err != nil {
			return fmt.Errorf("publish demo agents: %w", err)
		}
	}
	m.goLoop(ctx, func(ctx context.Context) { m.refreshLoop(ctx) })
	m.goLoop(ctx, func(ctx context.Context) { m.sweepLoop(ctx, network) })
	m.goLoop(ctx, m.Prober.Run)

	ln, err := net.Listen("tcp", m.Config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (is another node running? choose another --http-addr): %w", m.Config.HTTPAddr, err)
	}
	limited := connlimit.NewListener(ln, m.Config.connLimits())
	reg.MustRegister(limited.Collectors()...)
	m.listener = limited
	m.httpServer = &http.Server{
		Handler:           srv.Handler(),
		ConnContext:       connlimit.ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := m.httpServer.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("HTTP server stopped", "err", err)
		}
	}()
	if err := m.startDebug(); err != nil {
		return err
	}
	m.Logger.Info("AgentSite is up", "portal", m.HTTPURL(), "addrs", node.Addrs())
	return nil
}

// storageFull is the engine's "the disk is full" state for /readyz, if it
// keeps one (SQLite).
func storageFull(st store.Store) func() bool {
	if f, ok := st.(interface{ StorageFull() bool }); ok {
		return f.StorageFull
	}
	return nil
}

// searchIndex puts the in-process search index in front of st
// (store/searchindex) and starts loading it: searches use the database
// until it has loaded, then the index. Every write of the node passes
// through it, so a search finds what the node just wrote. status is its
// state for /readyz (nil without an index).
func (m *Main) searchIndex(ctx context.Context, st store.Store, reg prometheus.Registerer) (indexed store.Store, status func() (state, errKind string)) {
	e, ok := st.(searchindex.Engine)
	if !ok {
		return st, nil
	}
	idx := searchindex.New(e, m.Logger)
	reg.MustRegister(idx.Collectors()...)
	m.goLoop(ctx, func(ctx context.Context) {
		if err := idx.Run(ctx); err != nil && ctx.Err() == nil {
			m.Logger.Error("search index stopped; searches use the database", "err", err)
		}
	})
	return idx, idx.Status
}

// cachedStore puts the read cache in front of st's network view (listings
// and nodes), the reads the portal repeats (search, counts, tags): every
// write of the Sink, the sweep and registration goes through it and
// invalidates it (store.Cache). full is st with that cache in place, for
// the HTTP surfaces; accounts, sessions, conversations and backends go
// straight to the engine, which bounds and records every call.
func cachedStore(st store.Store) (network store.Network, full store.Store) {
	network = store.NewCache(st, time.Second, 10_000)
	return network, store.Composed{
		Network: network, Backends: st, Accounts: st, Sessions: st, Conversations: st, Conn: st,
	}
}

func (m *Main) goLoop(ctx context.Context, f func(context.Context)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f(ctx)
	}()
}

// Close shuts down in reverse order: HTTP (with a deadline), background
// loops, the network, then the store.
func (m *Main) Close() error {
	var errs []error
	if m.Server != nil {
		m.Server.CloseChats()
	}
	if m.httpServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.httpServer.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("HTTP shutdown: %w", err))
		}
		cancel()
	}
	if m.debugServer != nil {
		if err := m.debugServer.Close(); err != nil {
			errs = append(errs, fmt.Errorf("debug server close: %w", err))
		}
		m.debugServer = nil
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.Peers != nil { // before p2p: turns to other nodes end here
		if err := m.Peers.Close(); err != nil {
			errs = append(errs, fmt.Errorf("peer MCP clients close: %w", err))
		}
		m.Peers = nil
	}
	if m.Node != nil {
		if err := m.Node.Close(); err != nil {
			errs = append(errs, fmt.Errorf("p2p shutdown: %w", err))
		}
		m.Node = nil
	}
	if m.Runtime != nil { // after HTTP and p2p: nothing asks it any more
		if err := m.Runtime.Close(); err != nil {
			errs = append(errs, fmt.Errorf("agent runtime close: %w", err))
		}
		m.Runtime = nil
	}
	if m.Store != nil {
		if err := m.Store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("store close: %w", err))
		}
		m.Store = nil
	}
	m.httpServer = nil
	return errors.Join(errs...)
}

// sweepLoop applies the liveness rules every heartbeat interval: silent
// nodes' listings turn stale, expired listings offline.
func (m *Main) sweepLoop(ctx context.Context, st store.Network) {
	t := time.NewTicker(m.Config.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := store.Sweep(ctx, st, m.Node.PeerID(), time.Now().UTC(), m.Config.staleAfter(), m.Config.RecordTTL, m.Config.UnheardExpiry); err != nil && ctx.Err() == nil {
			m.Logger.Warn("liveness sweep failed; will retry", "err", err)
		}
	}
}

// backendLookup finds a local agent's backend for the runtime; an agent
// without one is not hosted here.
func backendLookup(st store.Backends) func(ctx context.Context, agentID string) (agent.Backend, error) {
	return func(ctx context.Context, agentID string) (agent.Backend, error) {
		b, err := st.GetBackend(ctx, agentID)
		if errors.Is(err, store.ErrNotFound) {
			return b, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, agentID)
		}
		return b, err
	}
}

// hostedAgents is peermcp.Agents on the store: the agents this node hosts
// and has not deleted.
type hostedAgents struct{ st store.Catalogue }

// HostedAgent implements peermcp.Agents.
func (h hostedAgents) HostedAgent(ctx context.Context, id string) (agent.Record, error) {
	l, err := h.st.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && (!l.Local || l.Record.Tombstone)):
		return agent.Record{}, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, id)
	case err != nil:
		return agent.Record{}, err
	}
	return l.Record, nil
}

// peerTurnLimit is the budget of turns each other node may send this one,
// keyed by the calling peer. A portal forwards many people's turns, so a
// peer's budget is 100 people's chat rate: a safety valve against one
// misbehaving node, not a quota.
func peerTurnLimit(chatRate int) func(caller string) bool {
	rates := httpkit.NewRates(100 * chatRate)
	return func(caller string) bool { return rates.Allow(caller, time.Now()) }
}
