package handlers

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/go-chi/httprate"

	"github.com/agentsite/agentsite/handlers/httpkit"
)

// Body limits. Forms and API bodies are small; a record is at most 16 KiB and
// a registration carries a little more (backend settings).
const (
	MaxFormBytes = 64 << 10
	MaxAPIBytes  = 64 << 10
	// MaxBatchBytes bounds POST /api/v1/agents:batch (1000 registrations).
	MaxBatchBytes = 16 << 20
	// OperatorWritesPerMinute is the operator token's budget of API
	// writes (a batch counts once), in place of the per-client one.
	OperatorWritesPerMinute = 600
)

// Handler returns the whole URL space of the node.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(middleware.RequestID)
	r.Use(httpkit.ClientIP(s.Config.TrustedProxies))
	r.Use(s.recoverer)
	r.Use(s.observe)
	r.Use(s.refuseOverLimit)
	r.Use(s.deadlines)
	r.Use(securityHeaders)
	r.Use(s.originRule().Handler)

	// Separate budgets: guessing passwords is limited hard; registering
	// and editing agents (forms and API scripts) more loosely.
	authLimit := httprate.LimitBy(s.Config.RateLimit, time.Minute, httpkit.ClientKeyFunc,
		httprate.WithLimitHandler(s.tooManyRequests))
	perIP := s.operatorOr(httprate.LimitBy(6*s.Config.RateLimit, time.Minute, httpkit.ClientKeyFunc,
		httprate.WithLimitHandler(s.tooManyRequests)))
	// Writes: per client IP, and per account whichever IPs it uses
	// (accountLimit).
	writeLimit := func(next http.Handler) http.Handler { return perIP(s.accountLimit(next)) }

	// Health and metrics: no session, no body.
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	r.Handle("/metrics", s.metrics.handler(s.Config.MetricsToken))
	r.Handle("/static/*", s.staticHandler())

	// A2A (1.0 over JSON-RPC and HTTP+JSON, 0.3 over JSON-RPC): the node's
	// card and concierge, and every agent on the planet at /a2a/{id}.
	// Bodies are capped and turns rate-limited by the surface itself, which
	// answers in the protocol's terms (handlers/a2a Routes).
	// The cards are public discovery documents any page may read (CORS);
	// the A2A surface marks its own, the per-agent cards included.
	publicRead(r, "/.well-known/agent-card.json", s.A2A.NodeCard)
	publicRead(r, "/.well-known/agent.json", s.A2A.LegacyCard)
	r.Mount("/a2a", s.A2A.Routes())

	// MCP for people's MCP clients (Streamable HTTP). Not under the API's
	// body limit: it caps bodies itself. The Origin rule stays in front:
	// it refuses only cross-origin browser requests, which the MCP spec
	// wants refused too (mcpserver applies it to GET and DELETE as well);
	// MCP clients send no Origin.
	r.Handle("/mcp", s.mcpOrHelp(s.publicMCP().Handler()))

	// The MCP Registry's read API (/v0.1): the catalogue as a registry.
	r.Get("/v0.1/servers", s.MCPRegistry.List)
	r.Get("/v0.1/servers/*", s.MCPRegistry.Server)

	// Discovery standards: the ARD registry (handlers/ard).
	s.discoveryRoutes(r)

	// Bulk registration (operator token): a bigger body than the rest of
	// the API.
	r.With(s.limitBody(MaxBatchBytes), writeLimit).Post("/api/v1/agents:batch", s.API.BatchAgents)

	// JSON API.
	r.Route("/api/v1", func(r chi.Router) {
		r.Use(s.limitBody(MaxAPIBytes))
		r.Get("/node", s.API.NodeInfo)
		r.Get("/agents", s.API.ListAgents)
		r.Get("/agents/{id}", s.API.GetAgent)
		r.Get("/chat", s.ChatSocket.ServeHTTP)
		r.Post("/agents/{id}/messages", s.API.SendMessage)
		r.Get("/conversations/{id}", s.API.GetConversation)
		r.With(perIP).Post("/network/search", s.API.NetworkSearch) // no listing written
		r.Group(func(r chi.Router) {
			r.Use(writeLimit)
			r.Post("/agents", s.API.CreateAgent)
			r.Put("/agents/{id}", s.API.UpdateAgent)
			r.Delete("/agents/{id}", s.API.DeleteAgent)
		})
		r.MethodNotAllowed(s.apiMethodNotAllowed)
	})

	// Portal pages: sessions, form body limits.
	r.Group(func(r chi.Router) {
		r.Use(s.sessions.Middleware)
		r.Use(s.formsSayWhence)          // after the session, so a 403 is a page
		r.Use(s.limitBody(MaxFormBytes)) // after the session, so a 413 is a page
		r.MethodNotAllowed(s.pageMethodNotAllowed)
		r.Get("/", s.pages.PageHome)
		r.Get("/agents", s.pages.PageAgents)
		r.Get("/agents/{id}", s.pages.PageAgent)
		r.Get("/publishers/{peer}", s.pages.PagePublisher)
		r.Get("/nodes", s.pages.PageNodes)
		r.Get("/help/status", s.pages.PageStatusHelp)
		r.Get("/chat", s.pages.PageChatIndex)
		r.Get("/chat/{id}", s.pages.PageChat)
		r.Post("/chat/{id}", s.pages.SubmitChat)
		r.Post("/chat/{id}/conversations/{cid}/rename", s.pages.SubmitRenameConversation)
		r.Post("/chat/{id}/conversations/{cid}/delete", s.pages.SubmitDeleteConversation)
		r.Post("/chat/{id}/conversations/{cid}/share", s.pages.SubmitShareConversation)
		r.Post("/chat/{id}/conversations/{cid}/unshare", s.pages.SubmitUnshareConversation)
		r.Get("/share/{token}", s.pages.PageShare)
		r.Get("/signup", s.pages.PageSignup)
		r.Get("/login", s.pages.PageLogin)
		r.Post("/logout", s.pages.SubmitLogout)
		r.Group(func(r chi.Router) {
			r.Use(authLimit)
			r.Post("/signup", s.pages.SubmitSignup)
			r.Post("/login", s.pages.SubmitLogin)
		})
		r.With(perIP).Post("/agents/network-search", s.pages.SubmitNetworkSearch)
		r.Group(func(r chi.Router) {
			r.Use(s.pages.RequireLogin)
			r.Get("/register", s.pages.PageRegister)
			r.Get("/register/tools", s.pages.PageToolPicker) // the agent form's tool picker
			r.Get("/account", s.pages.PageAccount)
			r.Get("/account/tokens", s.pages.PageAccount)
			r.Post("/account/tokens", s.pages.SubmitCreateToken)
			r.Post("/account/tokens/{tokenID}/delete", s.pages.SubmitDeleteToken)
			r.Post("/account/memories/{memoryID}/delete", s.pages.SubmitDeleteMemory)
			r.Post("/account/memories/delete", s.pages.SubmitDeleteMemories)
			r.With(authLimit).Post("/account/password", s.pages.SubmitChangePassword)
			r.With(authLimit).Post("/account/delete", s.pages.SubmitDeleteAccount)
			r.Get("/account/agents/{id}/edit", s.pages.PageEditAgent)
			r.Post("/account/agents/{id}/delete", s.pages.SubmitDeleteAgent)
			r.Group(func(r chi.Router) {
				r.Use(writeLimit)
				// Saving, or the Test backend button (an outbound probe).
				r.Post("/register", s.pages.SubmitRegister)
				r.Post("/account/agents/{id}/edit", s.pages.SubmitEditAgent)
			})
		})
	})
	r.NotFound(s.notFound)
	return r
}

// publicRead routes GET path to h as a public discovery document: any
// page may read it (CORS, no credentials), and its preflight is answered.
// Nothing else is opened to other origins.
func publicRead(r chi.Router, path string, h http.HandlerFunc) {
	r.With(httpkit.PublicRead).Get(path, h)
	r.Options(path, httpkit.Preflight)
}

// operatorOr is perClient for everyone but requests bearing the operator
// token, which spend the operator's own, higher budget instead (a script
// registering a catalogue would exhaust one client's in a minute).
func (s *Server) operatorOr(perClient func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		limited := perClient(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !s.Accounts.IsOperator(r) {
				limited.ServeHTTP(w, r)
				return
			}
			if !s.operatorWrites.Allow("operator", time.Now()) {
				s.tooManyRequests(w, r)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
