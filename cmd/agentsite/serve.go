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
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/p2p/peermcp"
	"github.com/agentsite/agentsite/store"
)

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
	// LinkDelay, when set before Run, is the round-trip time of every
	// libp2p connection (p2p.Config.LinkDelay: benchmarks and tests built
	// with -tags agentsite_testnet only).
	LinkDelay time.Duration
	// OutboundTestAllow, when set before Run (tests only), opens these
	// loopback endpoints to every outbound purpose, push and proofs
	// included: a test's receivers live nowhere else.
	OutboundTestAllow runtime.AllowList
	// VerifyHTTPSPort, when set before Run, is the port HTTPS domain
	// proofs are fetched from in place of 443 (tests only).
	VerifyHTTPSPort int

	// The node's services, set by Run from the app it builds (for tests
	// and tools): Store is the database engine, Server the HTTP surfaces.
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

	app        *app
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
	return &Main{LogOutput: os.Stderr, Config: defaultConfig()}
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

// Run builds the node (the store, p2p and the use cases: buildApp), puts
// it on HTTP, starts its background work and serves, then returns; the
// node runs until Close.
func (m *Main) Run(ctx context.Context) error {
	if err := m.Config.Validate(); err != nil {
		return err
	}
	m.Logger = m.Config.newLogger(m.LogOutput)
	ctx, m.cancel = context.WithCancel(ctx)
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The HTTP port first: a port taken is the commonest reason not to
	// start, and it must not leave a new node key (or a database) behind.
	ln, err := net.Listen("tcp", m.Config.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s (is another node running? choose another --http-addr): %w", m.Config.HTTPAddr, err)
	}
	served := false
	defer func() {
		if !served {
			ln.Close()
		}
	}()
	a, err := buildApp(ctx, m.Config, appDeps{Logger: m.Logger, Metrics: metrics, HealthSource: m.HealthSource, LinkDelay: m.LinkDelay, VerifyHTTPSPort: m.VerifyHTTPSPort, OutboundTestAllow: m.OutboundTestAllow})
	if err != nil {
		return err
	}
	m.useApp(a)
	if err := m.buildHTTP(metrics); err != nil {
		return err
	}
	if err := a.startBackground(); err != nil {
		return err
	}
	served = true
	if err := m.serve(metrics, ln); err != nil {
		return err
	}
	m.Logger.Info("AgentSite is up", "portal", m.HTTPURL(), "addrs", a.node.Addrs())
	return nil
}

// useApp keeps a and shows its services in Main's fields.
func (m *Main) useApp(a *app) {
	m.app = a
	m.Store, m.Node, m.Publisher, m.Runtime, m.Peers = a.engine, a.node, a.publisher, a.runtime, a.peers
	m.Health, m.Prober = a.health, a.prober
}

// buildHTTP puts the app's finished services on HTTP, with the HTTP
// settings of the flags.
func (m *Main) buildHTTP(metrics prometheus.Registerer) error {
	a := m.app
	cfg := m.Config.httpConfig()
	cfg.BcryptCost = m.BcryptCost
	cfg.StorageFull, cfg.SearchIndexStatus = storageFull(a.engine), a.indexStatus
	srv, err := handlers.New(handlers.Deps{
		Store: a.full, Node: a.node, Registry: a.registry, Chat: a.chat, Live: a.live, Discover: a.discover,
		Health: a.health, Tester: a.prober, Lifetime: a.lifetime, Logger: m.Logger, Metrics: metrics,
		CardKey: a.key, Push: a.outbound.Policy(runtime.PurposePush),
		Verified: a.verify, Sync: a.syncView(),
	}, cfg)
	if err != nil {
		return fmt.Errorf("build HTTP handlers: %w", err)
	}
	m.Server = srv
	return nil
}

// serve serves on ln, Run's listener on --http-addr (behind the
// connection caps), listens on --debug-addr, and serves until Close.
func (m *Main) serve(metrics prometheus.Registerer, ln net.Listener) error {
	limited := connlimit.NewListener(ln, m.Config.connLimits())
	metrics.MustRegister(limited.Collectors()...)
	m.listener = limited
	srv := &http.Server{
		Handler:           m.Server.Handler(),
		ConnContext:       connlimit.ConnContext,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(m.Logger.Handler(), slog.LevelWarn),
	}
	m.httpServer = srv
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		if err := srv.Serve(limited); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.Logger.Error("HTTP server stopped", "err", err)
		}
	}()
	return m.startDebug()
}

// Close shuts down in reverse order: chat sockets and live turns, HTTP
// (with a deadline), pprof, then the app (background work, peer clients,
// p2p, runtime, store), and logs one line saying what stopped and how
// long it took.
func (m *Main) Close() error {
	began := time.Now()
	var errs []error
	var stopped []string
	if m.app != nil {
		m.app.endLifetime()
	}
	if m.httpServer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := m.httpServer.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("HTTP shutdown: %w", err))
		}
		cancel()
		m.httpServer = nil
		stopped = append(stopped, "HTTP")
	}
	if m.debugServer != nil {
		if err := m.debugServer.Close(); err != nil {
			errs = append(errs, fmt.Errorf("debug server close: %w", err))
		}
		m.debugServer = nil
		stopped = append(stopped, "pprof")
	}
	if m.cancel != nil {
		m.cancel()
	}
	m.wg.Wait()
	if m.app != nil {
		appStopped, err := m.app.close()
		if err != nil {
			errs = append(errs, err)
		}
		stopped = append(stopped, appStopped...)
		m.app = nil
		m.Store, m.Node, m.Runtime, m.Peers = nil, nil, nil, nil
	}
	if len(stopped) > 0 && m.Logger != nil {
		m.Logger.Info("AgentSite stopped", "stopped", strings.Join(stopped, ", "),
			"took", time.Since(began).Round(time.Millisecond), "errors", len(errs))
	}
	return errors.Join(errs...)
}
