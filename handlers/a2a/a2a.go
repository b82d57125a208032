// Package a2a is the node's A2A surface: A2A 1.0 over JSON-RPC and
// HTTP+JSON (REST), and A2A 0.3 over JSON-RPC for 0.3 clients, chosen by
// the method names and the A2A-Version header. Every agent on the
// planet, hosted here or on another node, is an A2A agent at /a2a/{id},
// and the node itself is a concierge agent at /a2a that finds agents and
// forwards messages to them.
//
// A contextId is an AgentChat conversation and each turn is a task. Turns
// go through agent/chat, which routes them to this node's runtime or over
// libp2p to the agent's host, exactly as the other surfaces' turns do.
// Tasks live in memory, bounded in number and age; the conversation is
// what lasts. A task belongs to the caller that made it when the caller
// is authenticated (a bearer token, or a portal session from this node's
// own pages); anonymous tasks are reached by their 130-bit id alone.
// Wire types are the official a2a-go modules' (v0.3 for
// 0.3, v2's a2a package for 1.0; see wire.go).
package a2a

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Catalog finds agents for the concierge: a sentence's search, as
// find_agents runs it (discover.Discover.Find).
type Catalog interface {
	Find(ctx context.Context, text, tag string, n int) ([]store.Listing, error)
}

// Config holds the A2A settings.
type Config struct {
	// NodeID is this node's peer id: it names the node's card.
	NodeID string
	// Version is the software version, shown on the node's card.
	Version string
	// PublicURL, when set, is the base of every URL in cards (the node
	// behind a TLS reverse proxy); nil: the request's scheme and host.
	PublicURL *url.URL
	// TurnTimeout bounds one turn. A turn runs detached from its request
	// (a task outlives a client that goes away), so it needs its own
	// bound; keep it below the stream write deadline so a blocking
	// message/send can still write the answer (DefaultTurnTimeout when
	// responses have none).
	TurnTimeout time.Duration
	// MaxTasks is how many tasks are kept for tasks/get; the least
	// recently used go first (DefaultMaxTasks).
	MaxTasks int
	// TaskTTL is how long a finished task is kept (DefaultTaskTTL).
	TaskTTL time.Duration
	// MaxRunning caps the turns running at once over A2A; more are
	// refused as busy (DefaultMaxRunning).
	MaxRunning int
	// Push is what a push callback URL may reach: the policy of the
	// guarded client notifications go through (NewPushClient).
	Push runtime.Policy
}

// The values of Config that no flag sets; the handlers root passes them.
const (
	// DefaultTurnTimeout bounds a turn when responses have no write
	// deadline to stay under.
	DefaultTurnTimeout = 100 * time.Second
	// DefaultMaxTasks: a task holds at most one 8 KiB message and one
	// reply (64 KiB by default), so the tasks kept hold at most ~70 MB.
	DefaultMaxTasks   = 1000
	DefaultTaskTTL    = time.Hour
	DefaultMaxRunning = 256
)

// check refuses the settings that have no "off": New takes a finished
// Config.
func (c Config) check() error {
	if c.TurnTimeout <= 0 || c.MaxTasks <= 0 || c.TaskTTL <= 0 || c.MaxRunning <= 0 {
		return fmt.Errorf("a2a: TurnTimeout (%s), MaxTasks (%d), TaskTTL (%s) and MaxRunning (%d) must be positive; pass DefaultTurnTimeout, DefaultMaxTasks, DefaultTaskTTL and DefaultMaxRunning for the defaults",
			c.TurnTimeout, c.MaxTasks, c.TaskTTL, c.MaxRunning)
	}
	return nil
}

// Server serves the A2A surface.
type Server struct {
	Chat    *chat.Chat
	Catalog Catalog
	// Rates is the per-client chat budget, shared with the other chat
	// surfaces: message/send and message/stream spend from it.
	Rates  *httpkit.Rates
	Logger *slog.Logger
	Now    func() time.Time
	Config Config
	// Accounts authenticates bearer tokens (the operator's or an API
	// token); nil: every caller is anonymous.
	Accounts *httpkit.Accounts
	// Sessions, when set, makes an account signed in on the portal the
	// caller of a request with its session cookie, when SameOrigin says
	// the request comes from this node's own pages (else it is
	// anonymous: the cookie rides on other sites' requests too).
	Sessions   *httpkit.Sessions
	SameOrigin func(*http.Request) bool
	// CardKey signs every card served (JWS over the card's JCS form, bound
	// to NodeID); nil: cards go unsigned.
	CardKey crypto.PrivKey
	// PushPolicy is what a callback URL may reach, checked when a config
	// is made; PushClient, the guarded client of that policy
	// (NewPushClient), checks it again on the address it dials. New sets
	// both from Config.Push.
	// PushBackoff is the first wait between two tries of one
	// notification.
	PushPolicy  runtime.Policy
	PushClient  *http.Client
	PushBackoff time.Duration
	// PushCallerWrites and PushTaskWrites are the budgets of push config
	// writes (creates and deletes): per caller (its IP, and its account)
	// and per task.
	PushCallerWrites *httpkit.Rates
	PushTaskWrites   *httpkit.Rates

	lifetime context.Context // ends at shutdown, and with it every turn
	tasks    *taskStore
	// started is when the node's card last changed (it names the software
	// version, which changes only with a restart): its Last-Modified.
	started time.Time
}

// New builds the A2A surface from a finished cfg (check says what is
// missing). Turns run on lifetime: they end when it does.
func New(lifetime context.Context, ch *chat.Chat, cat Catalog, rates *httpkit.Rates, logger *slog.Logger, cfg Config) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	return &Server{
		Chat: ch, Catalog: cat, Rates: rates, Logger: logger, Now: time.Now, Config: cfg,
		PushPolicy: cfg.Push, PushClient: NewPushClient(cfg.Push), PushBackoff: time.Second,
		lifetime:         lifetime,
		tasks:            newTaskStore(cfg.MaxTasks, cfg.MaxRunning, cfg.TaskTTL),
		started:          time.Now().UTC(),
		PushCallerWrites: httpkit.NewRates(pushWritesPerCaller),
		PushTaskWrites:   httpkit.NewRates(pushWritesPerTask),
	}, nil
}

// NewPushClient is the client push notifications go through: guarded by
// p, a notification bounded in time.
func NewPushClient(p runtime.Policy) *http.Client {
	return runtime.NewGuardedClientWithOptions(runtime.GuardOptions{Policy: p, Timeout: pushTimeout})
}

func (s *Server) now() time.Time { return s.Now().UTC() }

// base is the origin every URL in a card starts with.
func (s *Server) base(r *http.Request) string {
	public := ""
	if u := s.Config.PublicURL; u != nil {
		public = u.Scheme + "://" + u.Host
	}
	return httpkit.Origin(r, public)
}

// logFailure logs what went wrong on our side (5xx); a client's mistake
// or an agent's refusal is not worth a log line.
func (s *Server) logFailure(ctx context.Context, what string, e *httpkit.Error, err error) {
	if e.Status >= 500 && e.Status != httpkit.StatusClientClosed {
		s.Logger.WarnContext(ctx, what, "status", e.Status, "code", e.Code, "err", err)
	}
}

// shortID is the tail of a peer id, enough to tell nodes apart.
func shortID(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}
