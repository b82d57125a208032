// Package portal is AgentHub and AgentChat as people see them: the pages,
// their forms and HTMX partials, the no-JS chat form, logging in and out,
// and the error page every non-API failure ends on. It turns requests into
// calls on the use cases (agent/registry, agent/chat) and reads the store
// through the small interfaces below; the handlers root wires it into the
// URL space and sends it every page request's errors.
package portal

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Catalog is the part of the store the pages list and show agents from.
type Catalog interface {
	GetAgent(ctx context.Context, id string) (store.Listing, error)
	SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error)
	RecentAgents(ctx context.Context, limit int) ([]store.Listing, error)
	ListTags(ctx context.Context, limit int) ([]store.TagCount, error)
	TagFacets(ctx context.Context, q store.SearchQuery, limit int) ([]store.TagCount, error)
	Stats(ctx context.Context) (store.Stats, error)
	// CountLocal counts this node's agents (the Network page) from an
	// index, never reading them.
	CountLocal(ctx context.Context) (store.LocalCount, error)
	// ListNodes, GetNodes and CountNodes read the nodes table a page, a
	// few rows or a count at a time: a planet has many nodes.
	ListNodes(ctx context.Context, q store.NodeQuery) (store.NodePage, error)
	GetNodes(ctx context.Context, peerIDs []string) ([]store.Node, error)
	CountNodes(ctx context.Context) (map[string]int, error)
	// SharedNodeNames says which node names more than one node uses (the
	// pages then show the short peer id beside them).
	SharedNodeNames(ctx context.Context, names []string) (map[string]bool, error)
	// GetBackend prefills the edit form (all but the API key, which the
	// form only says is stored).
	GetBackend(ctx context.Context, agentID string) (agent.Backend, error)
}

// Users is the part of the store that knows accounts and their API tokens.
type Users interface {
	GetUserByID(ctx context.Context, id int64) (store.User, error)
	CreateAPIToken(ctx context.Context, userID int64, name string, hash []byte) (store.APIToken, error)
	ListAPITokens(ctx context.Context, userID int64) ([]store.APIToken, error)
	DeleteAPIToken(ctx context.Context, userID, tokenID int64) error
	// SetPassword and DeleteUser change and delete the account (the
	// account page).
	SetPassword(ctx context.Context, userID int64, passwordHash string) (revoked int, err error)
	DeleteUser(ctx context.Context, userID int64, ownerKey string, holdUntil time.Time) error
}

// Conversations is what AgentChat reads back: the side list and the
// messages of the open conversation (turns themselves go through Chat).
type Conversations interface {
	ListConversations(ctx context.Context, ownerKey string, limit int) ([]store.Conversation, error)
	ListMessages(ctx context.Context, conversationID string, limit int) ([]store.Message, error)
	SearchConversations(ctx context.Context, ownerKey, q string, limit int) ([]store.Conversation, error)
}

// Pages holds what the portal's handlers need. Every field is required
// but Health and Tester; the handlers root builds it once.
type Pages struct {
	Catalog       Catalog
	Users         Users
	Conversations Conversations
	Node          httpkit.Node
	Registry      *registry.Registry
	Chat          *chat.Chat
	// Live is AgentChat's turns on their way (a reloaded page shows the
	// reply so far, then attaches to the rest).
	Live     *chat.Live
	Accounts *httpkit.Accounts
	Sessions *httpkit.Sessions
	// ChatLimits is the per-owner and per-IP budget of chat turns, shared
	// with the WebSocket and the message API so that switching surfaces
	// does not buy more turns.
	ChatLimits *httpkit.Rates
	// Anon is the address ceiling of anonymous chat (all the visitors
	// behind one address together); with it a visitor's budget is its
	// session's alone. nil: the address shares one visitor's budget.
	Anon *httpkit.AnonBudget
	// Logins is the per-account budget of password attempts (logging in,
	// changing the password, deleting the account), beside the per-IP
	// one the routes apply.
	Logins  *httpkit.LoginLimits
	Logger  *slog.Logger
	Version string // shown on the network page
	// NodeName is this node's name for people (--node-name); "": it is
	// shown by its peer id.
	NodeName string
	Now      func() time.Time
	// Health shows owners their local agents' health, and Tester runs the
	// forms' Test backend button and probes an agent once it is saved.
	// Without them (nil) those parts are not shown.
	Health HealthReader
	Tester BackendTester
	// PublicURL is the origin (scheme://host) of --public-url, which the
	// "Use this agent" panel's URLs start with; "": the request's own.
	PublicURL string
	// SignsCards: the node signs the A2A cards it serves (the agent page
	// says so).
	SignsCards bool
	// Verified shows which domains publishers proved (verified.go); nil:
	// no badges and no publisher filter.
	Verified Verified
	// Fill tells how the catalogue fills from the network (fill.go); nil:
	// the pages say nothing of it.
	Fill Fill
	// Memories are what agents with memory remember of people, which the
	// account page lists and deletes (memories.go); nil: no such panel.
	Memories Memories
}

func (p *Pages) now() time.Time { return p.Now().UTC() }

// logIfServer logs 5xx errors with the original (internal) text; client
// errors and cancellations are not worth a log line.
func (p *Pages) logIfServer(r *http.Request, e *httpkit.Error, err error) {
	if e.Status >= 500 {
		p.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", err)
	}
}
