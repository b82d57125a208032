// Package store is the SQL cache of every listing this node has heard of,
// plus the portal's own data (users, sessions, API tokens, conversations).
// The contract is a few role interfaces (Catalogue, Nodes, Backends,
// Accounts, Sessions, Conversations; Store is all of them) and two engines,
// store/postgres and store/sqlite, held to the same behaviour by the
// store/storetest conformance suite. Each engine bounds every call by the
// store deadline and records its statements' metrics itself (Options).
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Sentinel errors; engines map their driver errors to these, so callers use
// errors.Is and never match strings.
var (
	// ErrNotFound: no such row.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a unique constraint (handle taken, duplicate name).
	ErrConflict = errors.New("conflict")
	// ErrStale: an upsert whose seq is not greater than the stored one; the
	// stored row is unchanged.
	ErrStale = errors.New("stale record: seq not newer than the stored one")
	// ErrSchemaTooNew: the database was migrated by a newer binary.
	ErrSchemaTooNew = errors.New("database schema is newer than this binary")
	// ErrUnavailable: the database could not be reached or did not answer
	// within the store deadline (Options.Timeout). The call did not
	// take effect; the same call may succeed once the database is back, so
	// callers answer "try again later" (503), not "internal error".
	ErrUnavailable = errors.New("store unavailable")
	// ErrStorageFull: the database has no room for the write (its disk is
	// full). The call did not take effect; reads still work, and writes
	// do again once space is freed, so callers answer 507, not 500.
	ErrStorageFull = errors.New("storage full")
)

// Listing statuses.
const (
	StatusOnline  = "online"
	StatusStale   = "stale"
	StatusOffline = "offline"
)

// Listing is one cached agent record with what this node knows about it.
type Listing struct {
	Record     agent.Record
	Envelope   []byte    // the signed envelope, as received; re-servable to peers
	Status     string    // online | stale | offline
	LastSeen   time.Time // last time the record or its host's heartbeat was heard
	HostPeerID string    // the peer that answers for the agent
	Local      bool      // hosted by this node
	UpdatedAt  time.Time // when this row last changed
	// Health is what the host last said of the agent in its heartbeat
	// (State is agent.HealthUnknown until it says anything); record
	// updates keep it.
	Health agent.Health
	// PublicJSON is the record's public fields as one JSON object
	// (PublicRecordJSON), kept by the store beside the record so a page of
	// search results is sent without decoding and re-encoding its JSON
	// columns. Engines fill it in SearchAgents; nil elsewhere.
	PublicJSON []byte
}

// SearchQuery selects listings. Zero values mean "no filter".
type SearchQuery struct {
	Q        string   // free text; words are prefix-matched and ANDed; ranked by relevance
	Tags     []string // every tag must match (AND)
	Statuses []string // empty: online and stale (offline hidden by default)
	Owner    string   // only listings registered by this portal account
	Health   []string // only these health states (agent.Health*); empty: any
	// Publishers keeps only the listings of these publishers (peer ids):
	// the "verified publishers only" filter, the peers agent/verify proved
	// a domain for. Empty: any publisher (a caller that wants "none of
	// them" asks nothing).
	Publishers []string
	Limit      int    // 1..MaxLimit; 0 means DefaultLimit
	Cursor     string // opaque, from a previous page's NextCursor
	// Sort orders the results: SortRelevance ("" too) or SortNewest order
	// a text search (without text the order is newest first); SortName
	// orders by display name (lower-cased; the engine's own byte order),
	// then first-seen, with or without text; SortUsed by the week's
	// conversations (agent.Health.Uses7d), most first, then newest first,
	// with or without text. Failing agents come last in every order.
	Sort string
	// PublicOnly says the caller sends the listings as JSON and reads only
	// PublicJSON and the node's own fields (Status, LastSeen, HostPeerID,
	// Local, Health) besides Record.ID: engines may then leave the
	// envelope and the record's skills and endpoints out. The API's list
	// endpoint sets it.
	PublicOnly bool
}

// Search orders (SearchQuery.Sort).
const (
	SortRelevance = "relevance"
	SortNewest    = "newest"
	SortName      = "name"
	SortUsed      = "used"
)

// Page limits.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// SearchPage is one page of results. NextCursor is empty on the last page.
type SearchPage struct {
	Listings   []Listing
	NextCursor string
}

// Stats feeds the overview page.
type Stats struct {
	Agents       int // listings that are not tombstoned and not offline
	OnlineAgents int
	Tags         int // distinct tags over those listings
	Nodes        int
}

// TagCount is a tag and how many visible listings carry it.
type TagCount struct {
	Tag   string
	Count int
}

// Node is a peer this node has heard from.
type Node struct {
	PeerID string
	// Name is what the node calls itself in its heartbeats (--node-name,
	// agent.CheckNodeName); "" for a node that names itself nothing.
	Name          string
	Addrs         []string
	Version       string
	AgentsHosted  int
	Load          float64
	LastHeartbeat time.Time
	Status        string // online | stale | offline
	// FirstHeard is when this node began hearing the node without a gap
	// long enough to call it offline: the evidence its listings earn
	// (docs/architecture.md "Listings held"). UpsertNode keeps the stored
	// one unless the stored row is offline and this one online (a node
	// back after silence starts again); zero writes LastHeartbeat.
	FirstHeard time.Time
}

// NodeQuery selects a page of the nodes table, in peer ID order (bytes):
// a keyset that heartbeats do not move, unlike the time of the last one.
type NodeQuery struct {
	After  string // only nodes whose peer ID sorts after this one: the next page
	Before string // only nodes whose peer ID sorts before this one: the previous page (when After is empty)
	Limit  int    // 1..MaxLimit; 0 means DefaultLimit
}

// NodePage is one page of nodes. Next is the After of the page that
// follows, empty on the last page; Prev the Before of the page that comes
// before, empty on the first.
type NodePage struct {
	Nodes      []Node
	Next, Prev string
}

// HandleHeldError is CreateUser's refusal of a handle whose account was
// deleted lately: it is held until Until. It is an ErrConflict.
type HandleHeldError struct {
	Handle string
	Until  time.Time
}

func (e *HandleHeldError) Error() string {
	return fmt.Sprintf("handle %q is held until %s: its account was deleted lately", e.Handle, e.Until.UTC().Format(time.RFC3339))
}

// Is makes a held handle an ErrConflict to callers that only ask that.
func (e *HandleHeldError) Is(target error) bool { return target == ErrConflict }

// User is a portal account.
type User struct {
	ID           int64
	Handle       string
	PasswordHash string
	CreatedAt    time.Time
}

// APIToken is a personal API token. Only its hash is stored.
type APIToken struct {
	ID         int64
	UserID     int64
	Name       string
	Hash       []byte // sha256 of the token
	CreatedAt  time.Time
	LastUsedAt time.Time // zero if never used
}

// Conversation is a chat thread with one agent. OwnerKey binds it to a user
// ("user:<id>") or to an anonymous session ("anon:<random>"). AgentOwner and
// AgentPublisher are the owner and publisher of the agent's record when the
// conversation started: an agent id is derived from the publisher's key and
// the name only, so they tell whether a later record under the same id is
// still the same party's agent (the history must never reach anyone else).
type Conversation struct {
	ID             string
	AgentID        string
	OwnerKey       string
	AgentOwner     string
	AgentPublisher string
	Title          string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// Message is one turn of a conversation.
type Message struct {
	ID             int64
	ConversationID string
	Role           string // user | agent | error
	Text           string
	CreatedAt      time.Time
}

// The store's contract is split by role, so a consumer takes only what it
// uses and a wrapper of one role (the read cache of Network) cannot miss a
// method of another. Store is all of them: what the engines implement.

// Catalogue is the listings: every agent record this node has heard of,
// with what it knows about each.
type Catalogue interface {
	// SyncFeed serves incremental catalogue sync (changes.go).
	SyncFeed
	// UpsertRecord is the Sink: a verified record becomes (or updates) a
	// listing. A record whose seq is ≤ the stored one changes nothing and
	// returns ErrStale. A tombstone replaces the listing's fields and hides it
	// from search, the tombstone row is kept so an older seq cannot resurrect it.
	UpsertRecord(ctx context.Context, l Listing) error
	// GetAgent returns a listing by id, tombstoned or not.
	GetAgent(ctx context.Context, id string) (Listing, error)
	// SearchAgents pages through listings, never tombstones. Failing
	// agents come last (docs/architecture.md "Agent health"); before them and among them,
	// without Q the order is newest first (by first-seen order), with Q by
	// relevance. Keyset pagination: no gaps or repeats under concurrent
	// inserts.
	SearchAgents(ctx context.Context, q SearchQuery) (SearchPage, error)
	// RecentAgents returns the newest visible listings.
	RecentAgents(ctx context.Context, limit int) ([]Listing, error)
	// ListTags returns tags of visible listings, most used first.
	ListTags(ctx context.Context, limit int) ([]TagCount, error)
	// TagFacets counts the tags of the listings SearchAgents would find for
	// q (its text, tags, statuses, health and owner; not its cursor, limit
	// or sort): each tag with how many of those listings carry it, most
	// first then by tag, at most limit (NormalizeLimit) tags. Adding any
	// returned tag to q.Tags therefore finds at least one listing.
	TagFacets(ctx context.Context, q SearchQuery, limit int) ([]TagCount, error)
	// Stats counts visible listings, their tags and the known nodes (the
	// overview page).
	Stats(ctx context.Context) (Stats, error)
	// CountByStatus counts non-tombstoned listings per status (for metrics).
	CountByStatus(ctx context.Context) (map[string]int, error)
	// ListLocal returns the listings hosted by this node, tombstones excluded.
	ListLocal(ctx context.Context) ([]Listing, error)
	Locals
	// SetHostStatus sets the status of every non-offline listing hosted by
	// peer (heartbeats: online, missed heartbeats: stale); lastSeen is set
	// when status is online. Returns how many rows changed.
	SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error)
	// SetHealth records the health its host reported for agents (id →
	// health): only listings whose host is hostPeerID change, so no node
	// can set the health of another's agents; ids not known are skipped.
	// Returns how many listings changed.
	SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error)
	// CatalogueEnvelopes pages through the signed envelopes of every listing
	// that has not expired at now (tombstones included, so deletes spread),
	// in first-seen order after position after, optionally only those tagged
	// tag. next is the position to continue from, 0 on the last page. It
	// serves catalogue sync.
	CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) (envs [][]byte, next int64, err error)
	// ExpireListings marks listings past expires_at offline.
	ExpireListings(ctx context.Context, now time.Time) (int, error)
	// HasAgent reports whether a listing with id is stored, whatever its
	// status, tombstones included: the Sink's quota applies to new ids only.
	HasAgent(ctx context.Context, id string) (bool, error)
	// CountPublished counts the listings signed by publisher that are not
	// offline (tombstones included: each holds a row), stopping at limit:
	// the Sink's per-publisher quota. limit <= 0 counts nothing.
	CountPublished(ctx context.Context, publisher string, limit int) (int, error)
	// CountHosted counts the listings hosted by hostPeerID that are
	// neither offline nor tombstoned, stopping at limit: the Sink caps the
	// agents_hosted a heartbeat claims by what this node holds. limit <= 0
	// counts nothing.
	CountHosted(ctx context.Context, hostPeerID string, limit int) (int, error)
}

// Locals reads the listings this node hosts a page or a count at a time:
// a host of 100k agents timed out reading them all in full.
type Locals interface {
	// LocalRefs is a page of the hosted listings, tombstones excluded,
	// with only what the timers need (LocalQuery).
	LocalRefs(ctx context.Context, q LocalQuery) ([]LocalRef, error)
	// CountLocal counts the hosted listings, tombstones excluded, from an
	// index.
	CountLocal(ctx context.Context) (LocalCount, error)
}

// LocalQuery selects a page of the hosted listings. Without DueBefore
// the order is by id, from after After; with it only the listings that
// expire before DueBefore, the first to expire first, from after
// (AfterExpiry, After).
type LocalQuery struct {
	After       string
	AfterExpiry time.Time
	DueBefore   time.Time
	Publisher   string // only listings signed by it; "" any
	Limit       int    // 1..MaxLocalPage; 0 means MaxLocalPage
}

// MaxLocalPage bounds a page of LocalRefs.
const MaxLocalPage = 1000

// PageLimit is q.Limit within 1..MaxLocalPage (0: MaxLocalPage).
func (q LocalQuery) PageLimit() int {
	if q.Limit <= 0 || q.Limit > MaxLocalPage {
		return MaxLocalPage
	}
	return q.Limit
}

// LocalRef is what the host's timers read of one of its listings.
type LocalRef struct {
	ID, Name, Publisher string
	Seq                 uint64
	ExpiresAt           time.Time
	Kind                string // the backend's kind; "" without a stored backend
}

// LocalCount is how many listings this node hosts, and which.
type LocalCount struct {
	N int
	// Digest changes when the set of hosted listings does (a sum over
	// their rows' first-seen positions): a reader that mirrors the set
	// (the MCP agent tools) pages through it again only then.
	Digest int64
}

// Nodes is the peers this node has heard from (heartbeats).
type Nodes interface {
	// UpsertNode creates or replaces the row of n.PeerID. Only a verified
	// heartbeat makes a row (Sink.NodeSeen): a host never heard has none.
	UpsertNode(ctx context.Context, n Node) error
	// ListNodes returns a page of the nodes, in peer ID order (NodeQuery).
	// No caller loads every row: a planet has many.
	ListNodes(ctx context.Context, q NodeQuery) (NodePage, error)
	// GetNodes returns the rows of those of peerIDs that have one, in no
	// particular order (the connected peers of the network picture).
	GetNodes(ctx context.Context, peerIDs []string) ([]Node, error)
	// CountNodes counts the nodes per status; statuses without nodes are
	// absent from the map.
	CountNodes(ctx context.Context) (map[string]int, error)
	// TouchNodes sets the last_heartbeat of the nodes in seen that have a
	// row, in one statement: the Sink keeps when it last heard each node
	// in memory and writes it here lazily (Sink.Sweep), so an unchanged
	// heartbeat costs no write.
	TouchNodes(ctx context.Context, seen map[string]time.Time) error
	// SharedNodeNames reports which of names more than one node calls
	// itself (an index probe of at most two rows per name): a name is a
	// label, not an identity, so the pages show the short peer ID beside
	// a shared one. Only shared names are in the map.
	SharedNodeNames(ctx context.Context, names []string) (map[string]bool, error)
}

// Network is this node's view of the network: the listings and the nodes
// that host them. It is what the Sink and Sweep keep up to date, and what
// the read cache wraps: Stats counts nodes, so a node write must invalidate
// it like a listing write.
type Network interface {
	Catalogue
	Nodes
	// ExpireUnheard marks offline the stale listings not hosted here whose
	// host has no row in the nodes table (no heartbeat of it was ever
	// verified) and whose last_seen is before before: a flood of records
	// from identities that never send a heartbeat leaves default search
	// within the threshold, not at expires_at (up to a week). The Sink
	// enters such listings stale. The listings of self (this node's peer
	// id, which has no node row) are never read: a host of 100k agents
	// read all of them on every sweep to find none to expire. Returns how
	// many changed.
	ExpireUnheard(ctx context.Context, before time.Time, self string) (int, error)
	// LocalNames returns the names of the listings among ids that this
	// node hosts (tombstones excluded): what the heartbeat reads of its
	// hosted listings, for the ids whose health changed, never every row.
	LocalNames(ctx context.Context, ids []string) (map[string]string, error)
}

// Backends holds the backends of the agents this node hosts, secrets
// included; only the agent runtime and registration read them.
type Backends interface {
	// PutBackend stores the backend of a local agent (secrets included).
	PutBackend(ctx context.Context, agentID string, b agent.Backend) error
	// GetBackend returns the backend of a local agent (ErrNotFound if it
	// has none: the agent is not hosted here).
	GetBackend(ctx context.Context, agentID string) (agent.Backend, error)
	// DeleteBackend removes the backend of a local agent.
	DeleteBackend(ctx context.Context, agentID string) error
}

// Accounts is the portal's users and their personal API tokens.
type Accounts interface {
	// CreateUser returns ErrConflict if the handle is taken
	// (case-insensitive), and a *HandleHeldError (which is ErrConflict
	// too) if an account deleted lately held it and the hold (DeleteUser)
	// has not ended yet by the store's clock. It forgets the holds that
	// ended.
	CreateUser(ctx context.Context, handle, passwordHash string) (User, error)
	// GetUserByHandle looks a user up by handle, case-insensitively.
	GetUserByHandle(ctx context.Context, handle string) (User, error)
	// GetUserByID looks a user up by id.
	GetUserByID(ctx context.Context, id int64) (User, error)
	// SetPassword replaces a user's password hash and, in the same
	// transaction, deletes the user's API tokens: they were issued under
	// the old password, which may be what leaked. It returns how many
	// tokens went (ErrNotFound if there is no such user).
	SetPassword(ctx context.Context, userID int64, passwordHash string) (revoked int, err error)
	// DeleteUser deletes a user, its API tokens, its memories and the
	// conversations it owns (ownerKey, chat.UserOwner) with their messages (ErrNotFound if
	// there is no such user), and holds its handle until holdUntil:
	// CreateUser refuses it until then, so that whoever knew the handle
	// does not reach a newcomer under it. Its agents are the registry's
	// to delete first: their deletion is announced to the network.
	DeleteUser(ctx context.Context, userID int64, ownerKey string, holdUntil time.Time) error

	// CreateAPIToken stores a token's hash for userID: ErrNotFound if the
	// user does not exist, ErrConflict if the hash is already stored.
	CreateAPIToken(ctx context.Context, userID int64, name string, hash []byte) (APIToken, error)
	// ListAPITokens returns userID's tokens, oldest first.
	ListAPITokens(ctx context.Context, userID int64) ([]APIToken, error)
	// UseAPIToken looks a token up by hash, stamps last_used_at and returns
	// its user.
	UseAPIToken(ctx context.Context, hash []byte, now time.Time) (APIToken, User, error)
	// DeleteAPIToken deletes a token of userID (ErrNotFound otherwise).
	DeleteAPIToken(ctx context.Context, userID, tokenID int64) error
}

// Sessions back the web session manager (scs.CtxStore semantics).
type Sessions interface {
	// SessionFind returns a session's data; found is false for a missing or
	// expired one.
	SessionFind(ctx context.Context, token string) (data []byte, found bool, err error)
	// SessionCommit creates or replaces a session.
	SessionCommit(ctx context.Context, token string, data []byte, expiry time.Time) error
	// SessionDelete removes a session (none: no error).
	SessionDelete(ctx context.Context, token string) error
	// SessionDeleteExpired removes expired sessions.
	SessionDeleteExpired(ctx context.Context, now time.Time) error
}

// Conversations is the chat history: threads with one agent each, and
// their messages.
type Conversations interface {
	// CreateConversation stores c and returns it with its timestamps.
	CreateConversation(ctx context.Context, c Conversation) (Conversation, error)
	// StartConversation stores c and its first message (none when first
	// is nil) in one transaction: both or neither. The message goes to
	// c (its ConversationID is set to c.ID) and its CreatedAt defaults to
	// c's; c's UpdatedAt is at least the message's. It returns what
	// CreateConversation and AppendMessage would.
	StartConversation(ctx context.Context, c Conversation, first *Message) (Conversation, *Message, error)
	// GetConversation returns a conversation by id.
	GetConversation(ctx context.Context, id string) (Conversation, error)
	// ListConversations returns ownerKey's conversations, latest first.
	ListConversations(ctx context.Context, ownerKey string, limit int) ([]Conversation, error)
	// AppendMessage adds a message and bumps the conversation's updated_at.
	AppendMessage(ctx context.Context, m Message) (Message, error)
	// ListMessages returns the last limit (at most MaxMessages) messages
	// in chronological order.
	ListMessages(ctx context.Context, conversationID string, limit int) ([]Message, error)
	// MessageTail is how many messages conversation conversationID has
	// from id fromID on (fromID included) and the largest id among them
	// (0 when none): what the read cache asks to know that the newest
	// messages it holds of a conversation are still all there are
	// (Cache.Conversations). An index read, no message text.
	MessageTail(ctx context.Context, conversationID string, fromID int64) (count int, lastID int64, err error)
	// RenameConversation sets a conversation's title and returns it;
	// ErrNotFound if it does not exist. UpdatedAt does not move.
	RenameConversation(ctx context.Context, id, title string) (Conversation, error)
	// DeleteConversation removes a conversation and its messages;
	// ErrNotFound if it does not exist.
	DeleteConversation(ctx context.Context, id string) error
	// DeleteMessagesFrom removes a conversation's message fromID and every
	// later one (an exchange replaced by a retry or an edit).
	DeleteMessagesFrom(ctx context.Context, conversationID string, fromID int64) error
	// SearchConversations returns ownerKey's conversations whose title or
	// any user or agent message contains q, latest first: case-insensitive
	// (ASCII letters on SQLite), q taken literally (% and _ are not
	// wildcards) and cut to MaxConversationQuery bytes; limit as in
	// ListConversations. An empty q finds nothing.
	SearchConversations(ctx context.Context, ownerKey, q string, limit int) ([]Conversation, error)
	// ShareConversation gives conversation id a share link: the token
	// whose sha256 is tokenHash, in place of any earlier one. ErrNotFound
	// if the conversation does not exist.
	ShareConversation(ctx context.Context, id string, tokenHash []byte, at time.Time) error
	// UnshareConversation revokes conversation id's share link; none is
	// not an error.
	UnshareConversation(ctx context.Context, id string) error
	// SharedConversation returns the conversation whose share link's
	// token hashes to tokenHash; ErrNotFound if no link has it.
	SharedConversation(ctx context.Context, tokenHash []byte) (Conversation, error)
	// ConversationShared reports whether conversation id has a share link.
	ConversationShared(ctx context.Context, id string) (bool, error)
}

// Conn is the database connection itself, apart from what is stored.
type Conn interface {
	// Ping checks the database is reachable (readiness).
	Ping(ctx context.Context) error
	// Close releases the connections; the store is unusable afterwards.
	Close() error
}

// Store is the whole persistence contract, every role: what both engines
// implement and cmd/agentsite wires. Code that needs one role takes that
// role instead.
type Store interface {
	Network
	Backends
	Accounts
	Sessions
	Conversations
	Memories
	Conn
}

// Composed is a Store put together from one implementation per role, so
// that one role can be wrapped while the others go straight to the engine:
// cmd/agentsite puts the read cache in Network. Every field must be set.
type Composed struct {
	Network
	Backends
	Accounts
	Sessions
	Conversations
	Memories
	Conn
}

var _ Store = Composed{}

// Memo is the read cache's Memo when Network is a *Cache (cmd/agentsite
// puts one there); otherwise it calls load every time.
func (c Composed) Memo(ctx context.Context, key string, load func(ctx context.Context, n Network) (any, error)) (any, error) {
	if m, ok := c.Network.(*Cache); ok {
		return m.Memo(ctx, key, load)
	}
	return load(ctx, c.Network)
}

// AgentsGetter is an engine that reads many listings in one query (a
// bulk import reads each chunk's previous versions at once). Ids with no
// listing are left out; the order is unspecified.
type AgentsGetter interface {
	GetAgents(ctx context.Context, ids []string) ([]Listing, error)
}

// Tx is a bulk import's transaction, passed to the function of a
// Batcher: what registering a chunk of agents reads and writes, and
// nothing else. Its writes go into the transaction, each call on its own
// (in InBatch a refused call, such as a stale upsert, undoes only itself);
// its reads may not see the transaction's own writes before it commits
// (SQLite reads on its reader pool, Postgres in the transaction). A Tx
// belongs to one goroutine and is unusable once its function returned.
//
// Why a value and not the context: a transaction carried by the context
// made every engine call look for one, and let any call that happened to
// get that context write into it (STYLE.md, Store 5).
type Tx interface {
	GetAgent(ctx context.Context, id string) (Listing, error)
	// GetAgents reads many listings in one query, as AgentsGetter does.
	GetAgents(ctx context.Context, ids []string) ([]Listing, error)
	UpsertRecord(ctx context.Context, l Listing) error
	GetBackend(ctx context.Context, agentID string) (agent.Backend, error)
	PutBackend(ctx context.Context, agentID string, b agent.Backend) error
	DeleteBackend(ctx context.Context, agentID string) error
}

// Batcher is an engine that can run many writes as one transaction (bulk
// import): fn gets the transaction as a Tx; it commits when fn returns nil
// and is rolled back otherwise. The context fn gets is ctx; a Batcher's
// other methods called with it do not write into the transaction.
type Batcher interface {
	InBatch(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// InBatchWhole is InBatch without a savepoint per call: cheaper (on
	// SQLite a savepoint flushes the full-text index, on Postgres each
	// costs round trips), but a call that fails may leave part of its
	// writes in the transaction, or (Postgres) the transaction unusable.
	// fn must then return an error, so the whole is rolled back; the
	// caller redoes the work with InBatch to refuse only the failing call.
	// Postgres may send a write whose result is not read (PutBackend) with
	// the next statement, or at commit: its error is then that one's.
	InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}
