// Package api serves the JSON API under /api/v1 (except the chat
// WebSocket, package chatws): the catalogue, registering and editing
// agents with a bearer token, synchronous chat turns for scripts, and who
// this node is. Its answers are apiwire's shapes. Registrations go
// through agent/registry and turns through agent/chat; this package only
// speaks HTTP and JSON.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Catalog is what the API reads from the store besides searches (which
// go through Discover).
type Catalog interface {
	// CountLocal counts this node's agents from an index: at 100k hosted
	// agents reading them all took seconds and made /api/v1/node a 503.
	CountLocal(ctx context.Context) (store.LocalCount, error)
}

// ReplyBound admits a turn of key while it runs, or refuses it with
// chat.ErrTooManyReplies (chat.Live.Hold).
type ReplyBound interface {
	Hold(key chat.Owner) (release func(), err error)
}

// API holds the dependencies of the /api/v1 handlers.
type API struct {
	Catalog Catalog
	// Discover answers the catalogue's searches and runs network
	// searches, as on every surface.
	Discover *discover.Discover
	Node     httpkit.Node
	Registry *registry.Registry
	Chat     *chat.Chat
	Accounts *httpkit.Accounts
	// ChatRates is the per-client budget of chat turns, shared with the
	// other ways to chat so a client cannot spend it once per surface.
	ChatRates *httpkit.Rates
	// Replies bounds the replies one visitor has on their way at once,
	// the rule of AgentChat's turns (chat.Live); nil: no bound.
	Replies ReplyBound
	// Sessions, when set, tells an anonymous caller that carries the
	// portal's session cookie apart from the others at its address: its
	// budgets are its session's (visitor).
	Sessions *httpkit.Sessions
	// Anon is the address ceiling of anonymous turns (all the visitors
	// behind one address together); nil: none.
	Anon *httpkit.AnonBudget
	// Version is the node's, as GET /api/v1/node reports it.
	Version string
	// NodeName is the node's name for people (--node-name), as GET
	// /api/v1/node reports it.
	NodeName string
	Now      func() time.Time
	// Fail answers an error: the node's one error renderer (JSON on
	// these routes), which logs server faults and never leaks them.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
	// Logger logs what answers do not say (nil: nothing).
	Logger *slog.Logger
	// TestBackend probes a just-saved agent's backend once, as the form's
	// Test backend does, so a create or update says what it found; nil:
	// nothing is probed.
	TestBackend func(ctx context.Context, id string) *apiwire.BackendTest
	// Verified is the verified publishers (verified.go); nil: none.
	Verified Verified
	// Sync is how the catalogue fills (node.go); nil: GET /api/v1/node
	// says nothing of it.
	Sync SyncProgress

	// bodies are listBody's scratch buffers (*[]byte).
	bodies sync.Pool
}
