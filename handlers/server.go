// Package handlers is the HTTP shell of a node: routes.go (the whole URL
// space on one screen), the middleware every request passes (client caps,
// deadlines, security headers, the Origin rule, metrics), the one error
// dispatch (JSON for the API and /mcp, the portal's page elsewhere),
// health, metrics and static files. Server builds each protocol surface
// (portal, api, chatws, mcpserver) from the use cases and the store roles
// it needs; no globals.
package handlers

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/a2a"
	"github.com/agentsite/agentsite/handlers/api"
	"github.com/agentsite/agentsite/handlers/chatws"
	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
	"github.com/agentsite/agentsite/handlers/mcpserver"
	"github.com/agentsite/agentsite/handlers/portal"
	"github.com/agentsite/agentsite/store"
)

// Node is what the handlers need to know about this node's network side.
type Node interface {
	PeerID() string
	// Addrs are full multiaddrs ending in /p2p/<id>, for bootstrapping.
	Addrs() []string
	// PeerCount is the number of connected peers.
	PeerCount() int
	// Reachability is public, private or unknown (AutoNAT); RelayAddrs
	// are the addresses through relays the node holds a reservation on;
	// PeerKinds counts peers with a direct connection and those reached
	// only through a relay.
	Reachability() string
	RelayAddrs() []string
	PeerKinds() (direct, relayed int)
	// Ready reports whether the network side is up.
	Ready() bool
	// Lookup asks the network (DHT) for a record the cache lacks; it is
	// verified and cached before it returns.
	Lookup(ctx context.Context, id string) (*agent.Record, error)
	// SearchTag asks the DHT who provides tag and pulls those providers'
	// listings with it into the cache.
	SearchTag(ctx context.Context, tag string, maxProviders int) (providers, changed int, err error)
}

// Config holds the handler settings that come from the command line.
type Config struct {
	Version               string
	OperatorToken         string // bearer token with operator rights; empty disables
	AllowPrivateEndpoints bool   // allow loopback/private URLs in backends
	SecureCookies         bool   // Secure flag on cookies (off only for plain-HTTP tests)
	BcryptCost            int    // 0: bcrypt.DefaultCost
	RecordTTL             time.Duration
	// RateLimit is the number of login and sign-up attempts one IP may make
	// per minute (registrations and API writes: six times that). 0: 10.
	RateLimit int
	// SearchIndexStatus is the in-process search index's state (loading,
	// ok, retrying) and, while retrying, the kind of its last failed read
	// (/readyz shows both; searches work meanwhile, from the database).
	// nil: the node has no index.
	SearchIndexStatus func() (state, errKind string)
	// ChatRateLimit is the number of chat turns one IP (or account) may
	// send per minute, over the WebSocket and the message API. 0: 120.
	ChatRateLimit int
	// BodyTimeout bounds how long a client may take to send a request
	// body. 0: 15 s.
	BodyTimeout time.Duration
	// WriteTimeout bounds how long a response may take to write (a client
	// that does not read it is dropped). 0: 30 s.
	WriteTimeout time.Duration
	// StreamWriteTimeout is WriteTimeout for responses that run a whole
	// chat turn (/mcp, the message API, the no-JS chat form). 0: 2 min.
	StreamWriteTimeout time.Duration
	// MaxSocketsPerClient caps the chat WebSockets one client (IP, IPv6
	// /64) may hold open. 0: 16.
	MaxSocketsPerClient int
	// TrustedProxies are the CIDRs of the operator's reverse proxies: from
	// them, the client is read from X-Forwarded-For. Empty: the TCP peer.
	TrustedProxies []string
	// MetricsToken, when set, is the bearer token /metrics wants.
	MetricsToken string
	// PublicURL is the node's address behind a reverse proxy, e.g.
	// https://agents.example.org (see ParsePublicURL); empty: none. Its
	// host is accepted on /mcp and its origin by the Origin rule.
	PublicURL string
	// StorageFull reports whether the store's disk is full: writes fail
	// with 507 storage_full while reads are served, and /readyz says so.
	// nil: the engine cannot tell.
	StorageFull func() bool
}

// Server holds the dependencies of every handler.
type Server struct {
	Store     store.Store
	Node      Node
	Publisher registry.Publisher
	Logger    *slog.Logger
	Config    Config
	Now       func() time.Time
	// Registry is this node's agents; Chat runs chat turns. New builds
	// both; set Chat.Local (and Chat.Remote, with a network) before
	// serving chat.
	Registry *registry.Registry
	Chat     *chat.Chat
	// Live runs AgentChat's turns apart from the pages and sockets that
	// asked (a reply survives a reload): the chat socket starts, stops
	// and attaches to them; the chat page shows the ones on their way.
	Live     *chat.Live
	Accounts *httpkit.Accounts
	// API serves /api/v1 and ChatSocket the chat WebSocket; New builds
	// both from the fields above.
	API        *api.API
	ChatSocket *chatws.Handler
	// A2A serves the A2A protocol: agent cards and JSON-RPC endpoints.
	A2A *a2a.Server
	// MCPRegistry is the MCP Registry's read API (/v0.1) on the catalogue.
	MCPRegistry *mcpregistry.Handler

	sessions   *httpkit.Sessions
	pages      *portal.Pages
	metrics    *metrics
	chatLimits *httpkit.Rates
	// operatorWrites is the operator token's write budget, apart from
	// (and far above) the per-client one, so a script can register a
	// catalogue.
	operatorWrites *httpkit.Rates
	lifetime       context.Context // ends at CloseChats
	endLifetime    context.CancelFunc
}

// New builds a Server and registers its metrics with reg.
func New(st store.Store, node Node, pub registry.Publisher, logger *slog.Logger, cfg Config, reg prometheus.Registerer) (*Server, error) {
	if cfg.RecordTTL <= 0 {
		cfg.RecordTTL = agent.DefaultTTL
	}
	if cfg.BcryptCost == 0 {
		cfg.BcryptCost = bcrypt.DefaultCost
	}
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = 10
	}
	if cfg.ChatRateLimit <= 0 {
		cfg.ChatRateLimit = 120
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = 15 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.StreamWriteTimeout <= 0 {
		cfg.StreamWriteTimeout = 2 * time.Minute
	}
	if cfg.MaxSocketsPerClient <= 0 {
		cfg.MaxSocketsPerClient = 16
	}
	if cfg.PublicURL != "" {
		if _, err := ParsePublicURL(cfg.PublicURL); err != nil {
			return nil, fmt.Errorf("public URL: %w", err)
		}
	}
	s := &Server{
		Store:     st,
		Node:      node,
		Publisher: pub,
		Logger:    logger,
		Config:    cfg,
		Now:       time.Now,
	}
	now := func() time.Time { return s.Now() }
	s.Registry = &registry.Registry{Store: st, Publisher: pub, Network: node, PeerID: node.PeerID(),
		TTL: cfg.RecordTTL, AllowPrivate: cfg.AllowPrivateEndpoints, Logger: logger, Now: now}
	s.Chat = &chat.Chat{Store: st, Listings: s.Registry, Search: st, Logger: logger, Now: now}
	accounts, err := httpkit.NewAccounts(st, cfg.OperatorToken, cfg.BcryptCost, now)
	if err != nil {
		return nil, err
	}
	s.Accounts = accounts
	s.sessions = httpkit.NewSessions(st, cfg.SecureCookies)
	s.sessions.RenderError = s.renderError
	s.chatLimits = httpkit.NewRates(cfg.ChatRateLimit)
	s.operatorWrites = httpkit.NewRates(OperatorWritesPerMinute)
	s.pages = &portal.Pages{Catalog: st, Users: st, Conversations: st, Node: node,
		Registry: s.Registry, Chat: s.Chat, Accounts: accounts, Sessions: s.sessions,
		ChatLimits: s.chatLimits, Logger: logger, Version: cfg.Version, Now: now}
	if u := s.publicURL(); u != nil {
		s.pages.PublicURL = browserOrigin(u)
	}
	s.lifetime, s.endLifetime = context.WithCancel(context.Background())
	s.Live = &chat.Live{Chat: s.Chat, Lifetime: s.lifetime, Logger: logger}
	s.pages.Live = s.Live
	s.API = &api.API{Catalog: st, Node: node, Registry: s.Registry, Chat: s.Chat, Accounts: accounts,
		ChatRates: s.chatLimits, Replies: s.Live, Version: cfg.Version, Now: now, Fail: s.renderError, Logger: logger}
	s.ChatSocket = &chatws.Handler{Chat: s.Chat, Live: s.Live, Sessions: s.sessions,
		Sockets: connlimit.NewCounter(cfg.MaxSocketsPerClient), Rates: s.chatLimits,
		AllowOrigin: s.originRule().admits, Lifetime: s.lifetime, Fail: s.renderError, Logger: logger, Now: now}
	s.A2A = a2a.New(s.lifetime, s.Chat, st, s.chatLimits, logger, a2a.Config{
		NodeID: node.PeerID(), Version: cfg.Version, PublicURL: s.publicURL(),
		TurnTimeout: cfg.StreamWriteTimeout - cfg.StreamWriteTimeout/10, // the answer is written before the deadline
	})
	s.A2A.Now = now
	s.MCPRegistry = &mcpregistry.Handler{Catalog: st, PublicURL: cfg.PublicURL, Fail: s.renderError}
	m, err := newMetrics(reg, st)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	return s, nil
}

func (s *Server) now() time.Time { return s.Now().UTC() }

// UseHealth gives the portal this node's agent health: the tracker the
// owners' pages read and the prober behind the forms' Test backend
// button. Main calls it after New (the tracker counts the turns of the
// Chat New builds); a Server without it shows neither. Pass untyped nils,
// not nil pointers, to leave them out.
func (s *Server) UseHealth(h portal.HealthReader, t portal.BackendTester) {
	s.pages.Health, s.pages.Tester = h, t
}

// publicMCP is the public /mcp surface on the Server's dependencies. It is
// built with the routes (Handler), from the settings of that moment: tests
// change Now and the public URL between two Handlers.
func (s *Server) publicMCP() *mcpserver.Server {
	m := &mcpserver.Server{
		Catalog:     s.Store,
		Registry:    s.Registry,
		Chat:        s.Chat,
		ChatRates:   s.chatLimits,
		AdmitOrigin: s.originRule().admitAnyMethod,
		Version:     s.Config.Version,
		Logger:      s.Logger,
		Now:         s.Now,
	}
	if u := s.publicURL(); u != nil {
		m.PublicHost = u.Hostname()
	}
	return m
}

// CloseChats ends every chat socket with a close frame; http.Server's
// Shutdown does not touch hijacked connections, so Main calls this first.
func (s *Server) CloseChats() { s.endLifetime() }

// statusRecorder remembers the status code written, for metrics and logs.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// Hijack hands the connection over (WebSocket upgrades).
func (r *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

// Flush sends buffered output now (streamed responses: MCP, SSE).
func (r *statusRecorder) Flush() {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	_ = http.NewResponseController(r.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer (flush,
// hijack for WebSockets).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// mcpOrHelp serves /mcp to MCP clients and, to a browser that opens it
// (a GET that wants HTML and carries no MCP session), the page that says
// how to connect a client.
func (s *Server) mcpOrHelp(mcp http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Mcp-Session-Id") == "" && strings.Contains(r.Header.Get("Accept"), "text/html") {
			s.sessions.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.pages.PageMCPHelp(w, r, s.origin(r))
			})).ServeHTTP(w, r)
			return
		}
		mcp.ServeHTTP(w, r)
	})
}

// origin is the node's public origin: --public-url when set, else the
// request's scheme and host.
func (s *Server) origin(r *http.Request) string {
	public := ""
	if u := s.publicURL(); u != nil {
		public = u.Scheme + "://" + u.Host
	}
	return httpkit.Origin(r, public)
}
