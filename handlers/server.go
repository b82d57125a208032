// Package handlers is the HTTP shell of a node: routes.go (the whole URL
// space on one screen), the middleware every request passes (client caps,
// deadlines, security headers, the Origin rule, metrics), the one error
// dispatch (JSON for the API and /mcp, the portal's page elsewhere),
// health, metrics and static files. Server builds each protocol surface
// (portal, api, chatws, mcpserver, a2a) on the finished use cases it is
// given (Deps) and the store roles it needs; it builds no use case and
// keeps no globals.
package handlers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/a2a"
	"github.com/agentsite/agentsite/handlers/api"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/chatws"
	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
	"github.com/agentsite/agentsite/handlers/mcpserver"
	"github.com/agentsite/agentsite/handlers/portal"
	"github.com/agentsite/agentsite/store"
)

// Node is this node's network side as the handlers use it: what the API
// and the portal show of it and search through it (httpkit.Node) and, for
// /readyz, whether it is up.
type Node interface {
	httpkit.Node
	// Ready reports whether the network side is up.
	Ready() bool
}

// Deps are the finished services a Server puts on HTTP. The composition
// root (cmd/agentsite) builds each once, in dependency order, and the
// handlers only map requests to them; tests build them the same way
// (handlertest).
type Deps struct {
	// Store is the store the surfaces read and write (the read cache in
	// front of the network view, accounts and sessions on the engine).
	Store store.Store
	Node  Node
	// Registry is this node's agents, Chat the chat turns, Live
	// AgentChat's turns apart from the pages and sockets that asked (a
	// reply survives a reload).
	Registry *registry.Registry
	Chat     *chat.Chat
	Live     *chat.Live
	// Health shows owners their agents' health and Tester runs the forms'
	// Test backend button; nil (untyped): neither is shown.
	Health portal.HealthReader
	Tester portal.BackendTester
	// Lifetime ends at shutdown's first step: every chat socket gets a
	// close frame and every A2A task ends (http.Server's Shutdown does not
	// touch hijacked connections). Live's turns end with it too.
	Lifetime context.Context
	Logger   *slog.Logger
	// Metrics receives the HTTP and store metrics.
	Metrics prometheus.Registerer
	// CardKey, if set, signs the A2A cards the node serves (its libp2p
	// identity, bound to Node.PeerID).
	CardKey crypto.PrivKey
	// Push is what A2A push callbacks may reach: the node's outbound
	// policy for push (the zero Policy, the public internet only, except
	// in tests).
	Push runtime.Policy
	// Verified is the verified publishers (verified.go): the badges, the
	// "verified publishers only" filter, ARD's ranking; nil: none.
	Verified Verified
	// Sync is how the catalogue fills from the network: GET /api/v1/node's
	// per-peer progress, /nodes' "holding N of M", the home page's
	// "syncing"; nil: none of them is shown.
	Sync SyncView
}

// SyncView is what the API and the pages say of the catalogue's fill.
type SyncView interface {
	api.SyncProgress
	portal.Fill
}

// check says which required dependency is missing.
func (d Deps) check() error {
	var missing []string
	for name, absent := range map[string]bool{
		"Store": d.Store == nil, "Node": d.Node == nil, "Registry": d.Registry == nil, "Chat": d.Chat == nil,
		"Live": d.Live == nil, "Lifetime": d.Lifetime == nil, "Logger": d.Logger == nil, "Metrics": d.Metrics == nil,
	} {
		if absent {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("handlers: missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// Config holds the HTTP settings that come from the command line. Every
// value is explicit: the flags (cmd/agentsite/config.go) hold the
// defaults, and a zero time limit means none.
type Config struct {
	Version string
	// NodeName is this node's name for people (--node-name).
	NodeName      string
	OperatorToken string // bearer token with operator rights; empty disables
	SecureCookies bool   // Secure flag on cookies (off only for plain-HTTP tests)
	BcryptCost    int    // 0: bcrypt.DefaultCost
	// RateLimit is the number of login and sign-up attempts one IP may make
	// per minute (registrations and API writes: six times that), and of
	// password attempts at one account from anywhere; at least 1.
	RateLimit int
	// SearchIndexStatus is the in-process search index's state (loading,
	// ok, retrying) and, while retrying, the kind of its last failed read
	// (/readyz shows both; searches work meanwhile, from the database).
	// nil: the node has no index.
	SearchIndexStatus func() (state, errKind string)
	// ChatRateLimit is the number of chat turns one IP (or account) may
	// send per minute, over the WebSocket and the message API; at least 1.
	ChatRateLimit int
	// BodyTimeout bounds how long a client may take to send a request
	// body. 0: no bound.
	BodyTimeout time.Duration
	// WriteTimeout bounds how long a response may take to write (a client
	// that does not read it is dropped). 0: no bound.
	WriteTimeout time.Duration
	// StreamWriteTimeout is WriteTimeout for responses that run a whole
	// chat turn (/mcp, the message API, the no-JS chat form). 0: no bound.
	StreamWriteTimeout time.Duration
	// MaxSocketsPerClient caps the chat WebSockets one client (IP, IPv6
	// /64) may hold open; at least 1.
	MaxSocketsPerClient int
	// AnonTurnsPerAddress is the ceiling of anonymous chat turns in
	// flight from one address (IP, IPv6 /64), all the visitors behind it
	// together; each visitor (session) has its own, smaller bound
	// (chat.Live). 0: httpkit.DefaultAddressTurns.
	AnonTurnsPerAddress int
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
	// ReferAfter is how long another node must have been seen online
	// before ARD referrals name it (a few heartbeat intervals; 0: at once).
	ReferAfter time.Duration
}

// check refuses the settings that have no "off".
func (c Config) check() error {
	var errs []error
	if c.RateLimit < 1 || c.ChatRateLimit < 1 || c.MaxSocketsPerClient < 1 {
		errs = append(errs, fmt.Errorf("handlers: RateLimit (%d), ChatRateLimit (%d) and MaxSocketsPerClient (%d) must be at least 1",
			c.RateLimit, c.ChatRateLimit, c.MaxSocketsPerClient))
	}
	if c.PublicURL != "" {
		if _, err := ParsePublicURL(c.PublicURL); err != nil {
			errs = append(errs, fmt.Errorf("public URL: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Server holds the dependencies of every handler.
type Server struct {
	Store  store.Store
	Node   Node
	Logger *slog.Logger
	Config Config
	Now    func() time.Time
	// Registry, Chat and Live are the use cases the surfaces share
	// (Deps).
	Registry *registry.Registry
	Chat     *chat.Chat
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
	verified   Verified // nil: no verified publishers (Deps.Verified)
	pages      *portal.Pages
	metrics    *metrics
	chatLimits *httpkit.Rates
	// operatorWrites is the operator token's write budget, apart from
	// (and far above) the per-client one, so a script can register a
	// catalogue.
	operatorWrites *httpkit.Rates
	// accountWrites is each signed-in account's write budget, beside the
	// per-client one (writes.go).
	accountWrites *accountWrites
}

// maxLoginAccounts bounds the accounts the per-account password budget
// holds at once (httpkit.LoginLimits): a bucket is a few hundred bytes,
// and one that has filled up again (a minute without attempts) is
// dropped, so only a spray of this many handles a minute reaches it.
const maxLoginAccounts = 100_000

// New puts the finished services of deps on HTTP with the settings of
// cfg, and registers its metrics with deps.Metrics.
func New(deps Deps, cfg Config) (*Server, error) {
	if err := errors.Join(deps.check(), cfg.check()); err != nil {
		return nil, err
	}
	st, node, logger := deps.Store, deps.Node, deps.Logger
	s := &Server{
		Store:    st,
		Node:     node,
		Logger:   logger,
		Config:   cfg,
		Now:      time.Now,
		Registry: deps.Registry,
		Chat:     deps.Chat,
		Live:     deps.Live,
		verified: deps.Verified,
	}
	now := func() time.Time { return s.Now() }
	accounts, err := httpkit.NewAccounts(st, cfg.OperatorToken, cfg.BcryptCost, now)
	if err != nil {
		return nil, err
	}
	s.Accounts = accounts
	s.sessions = httpkit.NewSessions(st, cfg.SecureCookies)
	s.sessions.RenderError = s.renderError
	// A password change or an account deletion ends the account's other
	// sessions (httpkit.PasswordStamp).
	s.sessions.Stamp = func(ctx context.Context, id int64) (string, error) {
		u, err := st.GetUserByID(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		return httpkit.PasswordStamp(u.PasswordHash), nil
	}
	s.chatLimits = httpkit.NewRates(cfg.ChatRateLimit)
	anonTurns := cfg.AnonTurnsPerAddress
	if anonTurns <= 0 {
		anonTurns = httpkit.DefaultAddressTurns
	}
	anon := httpkit.NewAnonBudget(cfg.ChatRateLimit*httpkit.AddressRateShare, anonTurns)
	s.operatorWrites = httpkit.NewRates(OperatorWritesPerMinute)
	s.accountWrites = newAccountWrites(6 * cfg.RateLimit) // as much as one client address
	s.pages = &portal.Pages{Catalog: st, Users: st, Conversations: st, Node: node,
		Registry: s.Registry, Chat: s.Chat, Live: s.Live, Accounts: accounts, Sessions: s.sessions,
		ChatLimits: s.chatLimits, Anon: anon, Logins: httpkit.NewLoginLimits(cfg.RateLimit, maxLoginAccounts), Health: deps.Health, Tester: deps.Tester,
		Logger: logger, Version: cfg.Version, NodeName: cfg.NodeName, Now: now, Memories: st}
	if u := s.publicURL(); u != nil {
		s.pages.PublicURL = browserOrigin(u)
	}
	s.pages.SignsCards = deps.CardKey != nil
	s.pages.Verified = deps.Verified
	if deps.Sync != nil {
		s.pages.Fill = deps.Sync
	}
	s.API = &api.API{Catalog: st, Node: node, Registry: s.Registry, Chat: s.Chat, Accounts: accounts,
		ChatRates: s.chatLimits, Replies: s.Live, Sessions: s.sessions, Anon: anon, Version: cfg.Version, NodeName: cfg.NodeName, Now: now, Fail: s.renderError, Logger: logger,
		Verified: deps.Verified}
	if deps.Tester != nil {
		s.API.TestBackend = backendTest(deps.Tester)
	}
	if deps.Sync != nil {
		s.API.Sync = deps.Sync
	}
	s.ChatSocket = &chatws.Handler{Chat: s.Chat, Live: s.Live, Sessions: s.sessions,
		Sockets: connlimit.NewCounter(cfg.MaxSocketsPerClient), Rates: s.chatLimits, Anon: anon,
		AllowOrigin: s.originRule().admits, Lifetime: deps.Lifetime, Fail: s.renderError, Logger: logger, Now: now}
	turnTimeout := a2a.DefaultTurnTimeout
	if cfg.StreamWriteTimeout > 0 {
		turnTimeout = cfg.StreamWriteTimeout - cfg.StreamWriteTimeout/10 // the answer is written before the deadline
	}
	s.A2A, err = a2a.New(deps.Lifetime, s.Chat, st, s.chatLimits, logger, a2a.Config{
		NodeID: node.PeerID(), Version: cfg.Version, PublicURL: s.publicURL(), TurnTimeout: turnTimeout,
		MaxTasks: a2a.DefaultMaxTasks, TaskTTL: a2a.DefaultTaskTTL, MaxRunning: a2a.DefaultMaxRunning, Push: deps.Push,
	})
	if err != nil {
		return nil, err
	}
	s.A2A.Now = now
	s.A2A.Accounts, s.A2A.CardKey = accounts, deps.CardKey
	s.A2A.Sessions, s.A2A.SameOrigin = s.sessions, s.fromOwnPages()
	s.MCPRegistry = &mcpregistry.Handler{Catalog: st, PublicURL: cfg.PublicURL, Fail: s.renderError}
	m, err := newMetrics(deps.Metrics, st)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	return s, nil
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
		AgentCard: func(r *http.Request, l store.Listing) any {
			public := ""
			if u := s.publicURL(); u != nil {
				public = u.Scheme + "://" + u.Host
			}
			return a2a.AgentCard(l, httpkit.Origin(r, public))
		},
	}
	if s.verified != nil {
		m.Verified = s.verified
	}
	if u := s.publicURL(); u != nil {
		m.PublicHost = u.Hostname()
	}
	return m
}

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

// backendTest probes a just-saved agent once for the API's create and
// update, within the time the portal's forms give it (portal.ProbeAfterSave):
// a slower backend is left to the prober's next round and said so.
func backendTest(t portal.BackendTester) func(ctx context.Context, id string) *apiwire.BackendTest {
	return func(ctx context.Context, id string) *apiwire.BackendTest {
		ctx, cancel := context.WithTimeout(ctx, portal.ProbeAfterSave)
		defer cancel()
		res, err := t.ProbeAgent(ctx, id)
		switch {
		case err != nil:
			return nil
		case ctx.Err() != nil && !res.OK:
			return &apiwire.BackendTest{Message: "the backend did not answer within " + portal.ProbeAfterSave.String() + "; it will be checked again shortly"}
		}
		return &apiwire.BackendTest{OK: res.OK, Message: res.Message(), LatencyMS: res.Latency.Milliseconds()}
	}
}
