package store

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
)

// Instrumented wraps a Store and records the latency and errors of every
// call by operation, for /metrics. Generated from the Store interface; keep
// the two in step.
type Instrumented struct {
	next    Store
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

var _ Store = (*Instrumented)(nil)

// Instrument wraps s and registers its metrics with reg.
func Instrument(s Store, reg prometheus.Registerer) *Instrumented {
	i := &Instrumented{
		next: s,
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "agentsite", Subsystem: "store", Name: "query_duration_seconds",
			Help:    "Store call latency by operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "store", Name: "errors_total",
			Help: "Store calls that returned an error other than not-found or stale, by operation.",
		}, []string{"op"}),
	}
	reg.MustRegister(i.latency, i.errors)
	return i
}

func (i *Instrumented) done(op string, start time.Time, err error) {
	i.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	if err != nil && !isNotFoundOrStale(err) {
		i.errors.WithLabelValues(op).Inc()
	}
}

// UpsertRecord implements Store.
func (i *Instrumented) UpsertRecord(ctx context.Context, l Listing) error {
	start := time.Now()
	err := i.next.UpsertRecord(ctx, l)
	i.done("upsert_record", start, err)
	return err
}

// GetAgent implements Store.
func (i *Instrumented) GetAgent(ctx context.Context, id string) (Listing, error) {
	start := time.Now()
	r0, err := i.next.GetAgent(ctx, id)
	i.done("get_agent", start, err)
	return r0, err
}

// SearchAgents implements Store.
func (i *Instrumented) SearchAgents(ctx context.Context, q SearchQuery) (SearchPage, error) {
	start := time.Now()
	r0, err := i.next.SearchAgents(ctx, q)
	i.done("search_agents", start, err)
	return r0, err
}

// RecentAgents implements Store.
func (i *Instrumented) RecentAgents(ctx context.Context, limit int) ([]Listing, error) {
	start := time.Now()
	r0, err := i.next.RecentAgents(ctx, limit)
	i.done("recent_agents", start, err)
	return r0, err
}

// ListTags implements Store.
func (i *Instrumented) ListTags(ctx context.Context, limit int) ([]TagCount, error) {
	start := time.Now()
	r0, err := i.next.ListTags(ctx, limit)
	i.done("list_tags", start, err)
	return r0, err
}

// Stats implements Store.
func (i *Instrumented) Stats(ctx context.Context) (Stats, error) {
	start := time.Now()
	r0, err := i.next.Stats(ctx)
	i.done("stats", start, err)
	return r0, err
}

// CountByStatus implements Store.
func (i *Instrumented) CountByStatus(ctx context.Context) (map[string]int, error) {
	start := time.Now()
	r0, err := i.next.CountByStatus(ctx)
	i.done("count_by_status", start, err)
	return r0, err
}

// ListLocal implements Store.
func (i *Instrumented) ListLocal(ctx context.Context) ([]Listing, error) {
	start := time.Now()
	r0, err := i.next.ListLocal(ctx)
	i.done("list_local", start, err)
	return r0, err
}

// SetHostStatus implements Store.
func (i *Instrumented) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	start := time.Now()
	r0, err := i.next.SetHostStatus(ctx, hostPeerID, status, lastSeen)
	i.done("set_host_status", start, err)
	return r0, err
}

// ExpireListings implements Store.
func (i *Instrumented) ExpireListings(ctx context.Context, now time.Time) (int, error) {
	start := time.Now()
	r0, err := i.next.ExpireListings(ctx, now)
	i.done("expire_listings", start, err)
	return r0, err
}

// PutBackend implements Store.
func (i *Instrumented) PutBackend(ctx context.Context, agentID string, b agent.Backend) error {
	start := time.Now()
	err := i.next.PutBackend(ctx, agentID, b)
	i.done("put_backend", start, err)
	return err
}

// GetBackend implements Store.
func (i *Instrumented) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	start := time.Now()
	r0, err := i.next.GetBackend(ctx, agentID)
	i.done("get_backend", start, err)
	return r0, err
}

// DeleteBackend implements Store.
func (i *Instrumented) DeleteBackend(ctx context.Context, agentID string) error {
	start := time.Now()
	err := i.next.DeleteBackend(ctx, agentID)
	i.done("delete_backend", start, err)
	return err
}

// UpsertNode implements Store.
func (i *Instrumented) UpsertNode(ctx context.Context, n Node) error {
	start := time.Now()
	err := i.next.UpsertNode(ctx, n)
	i.done("upsert_node", start, err)
	return err
}

// ListNodes implements Store.
func (i *Instrumented) ListNodes(ctx context.Context) ([]Node, error) {
	start := time.Now()
	r0, err := i.next.ListNodes(ctx)
	i.done("list_nodes", start, err)
	return r0, err
}

// CreateUser implements Store.
func (i *Instrumented) CreateUser(ctx context.Context, handle, passwordHash string) (User, error) {
	start := time.Now()
	r0, err := i.next.CreateUser(ctx, handle, passwordHash)
	i.done("create_user", start, err)
	return r0, err
}

// GetUserByHandle implements Store.
func (i *Instrumented) GetUserByHandle(ctx context.Context, handle string) (User, error) {
	start := time.Now()
	r0, err := i.next.GetUserByHandle(ctx, handle)
	i.done("get_user_by_handle", start, err)
	return r0, err
}

// GetUserByID implements Store.
func (i *Instrumented) GetUserByID(ctx context.Context, id int64) (User, error) {
	start := time.Now()
	r0, err := i.next.GetUserByID(ctx, id)
	i.done("get_user_by_i_d", start, err)
	return r0, err
}

// CreateAPIToken implements Store.
func (i *Instrumented) CreateAPIToken(ctx context.Context, userID int64, name string, hash []byte) (APIToken, error) {
	start := time.Now()
	r0, err := i.next.CreateAPIToken(ctx, userID, name, hash)
	i.done("create_a_p_i_token", start, err)
	return r0, err
}

// ListAPITokens implements Store.
func (i *Instrumented) ListAPITokens(ctx context.Context, userID int64) ([]APIToken, error) {
	start := time.Now()
	r0, err := i.next.ListAPITokens(ctx, userID)
	i.done("list_a_p_i_tokens", start, err)
	return r0, err
}

// UseAPIToken implements Store.
func (i *Instrumented) UseAPIToken(ctx context.Context, hash []byte, now time.Time) (APIToken, User, error) {
	start := time.Now()
	r0, r1, err := i.next.UseAPIToken(ctx, hash, now)
	i.done("use_a_p_i_token", start, err)
	return r0, r1, err
}

// DeleteAPIToken implements Store.
func (i *Instrumented) DeleteAPIToken(ctx context.Context, userID, tokenID int64) error {
	start := time.Now()
	err := i.next.DeleteAPIToken(ctx, userID, tokenID)
	i.done("delete_a_p_i_token", start, err)
	return err
}

// SessionFind implements Store.
func (i *Instrumented) SessionFind(ctx context.Context, token string) ([]byte, bool, error) {
	start := time.Now()
	r0, r1, err := i.next.SessionFind(ctx, token)
	i.done("session_find", start, err)
	return r0, r1, err
}

// SessionCommit implements Store.
func (i *Instrumented) SessionCommit(ctx context.Context, token string, data []byte, expiry time.Time) error {
	start := time.Now()
	err := i.next.SessionCommit(ctx, token, data, expiry)
	i.done("session_commit", start, err)
	return err
}

// SessionDelete implements Store.
func (i *Instrumented) SessionDelete(ctx context.Context, token string) error {
	start := time.Now()
	err := i.next.SessionDelete(ctx, token)
	i.done("session_delete", start, err)
	return err
}

// SessionDeleteExpired implements Store.
func (i *Instrumented) SessionDeleteExpired(ctx context.Context, now time.Time) error {
	start := time.Now()
	err := i.next.SessionDeleteExpired(ctx, now)
	i.done("session_delete_expired", start, err)
	return err
}

// CreateConversation implements Store.
func (i *Instrumented) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	start := time.Now()
	r0, err := i.next.CreateConversation(ctx, c)
	i.done("create_conversation", start, err)
	return r0, err
}

// GetConversation implements Store.
func (i *Instrumented) GetConversation(ctx context.Context, id string) (Conversation, error) {
	start := time.Now()
	r0, err := i.next.GetConversation(ctx, id)
	i.done("get_conversation", start, err)
	return r0, err
}

// ListConversations implements Store.
func (i *Instrumented) ListConversations(ctx context.Context, ownerKey string, limit int) ([]Conversation, error) {
	start := time.Now()
	r0, err := i.next.ListConversations(ctx, ownerKey, limit)
	i.done("list_conversations", start, err)
	return r0, err
}

// AppendMessage implements Store.
func (i *Instrumented) AppendMessage(ctx context.Context, m Message) (Message, error) {
	start := time.Now()
	r0, err := i.next.AppendMessage(ctx, m)
	i.done("append_message", start, err)
	return r0, err
}

// ListMessages implements Store.
func (i *Instrumented) ListMessages(ctx context.Context, conversationID string, limit int) ([]Message, error) {
	start := time.Now()
	r0, err := i.next.ListMessages(ctx, conversationID, limit)
	i.done("list_messages", start, err)
	return r0, err
}

// Ping implements Store.
func (i *Instrumented) Ping(ctx context.Context) error {
	start := time.Now()
	err := i.next.Ping(ctx)
	i.done("ping", start, err)
	return err
}

// Close closes the wrapped store.
func (i *Instrumented) Close() error { return i.next.Close() }

func isNotFoundOrStale(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrStale)
}

// CatalogueEnvelopes implements Store.
func (i *Instrumented) CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) ([][]byte, int64, error) {
	start := time.Now()
	r0, r1, err := i.next.CatalogueEnvelopes(ctx, after, tag, limit, now)
	i.done("catalogue_envelopes", start, err)
	return r0, r1, err
}
