package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent"
)

// Instrumented wraps a Store: every call gets a deadline, and its latency
// and errors are recorded by operation, for /metrics. Generated from the
// Store interface; keep the two in step.
//
// The deadline is why a stalled database cannot hold requests (and their
// connections) for as long as the stall lasts: the call fails with
// ErrUnavailable instead, and the engines make sure it then did not take
// effect.
type Instrumented struct {
	next    Store
	timeout time.Duration
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

var _ Store = (*Instrumented)(nil)

// Instrument wraps s and registers its metrics with reg. Every call gets
// timeout as its deadline (a caller's earlier deadline stays); 0 means none.
func Instrument(s Store, reg prometheus.Registerer, timeout time.Duration) *Instrumented {
	i := &Instrumented{
		next:    s,
		timeout: timeout,
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

// storeCall is one store call in progress.
type storeCall struct {
	op     string
	start  time.Time
	parent context.Context // the caller's
	ctx    context.Context // parent with the store deadline
	cancel context.CancelFunc
}

func (i *Instrumented) begin(ctx context.Context, op string) storeCall {
	c := storeCall{op: op, start: time.Now(), parent: ctx, ctx: ctx, cancel: func() {}}
	if i.timeout > 0 {
		c.ctx, c.cancel = context.WithTimeout(ctx, i.timeout)
	}
	return c
}

// end records the call and returns its error, as ErrUnavailable if the
// store deadline (not the caller's own deadline or cancellation) cut it.
func (i *Instrumented) end(c storeCall, err error) error {
	c.cancel()
	i.latency.WithLabelValues(c.op).Observe(time.Since(c.start).Seconds())
	if err == nil {
		return nil
	}
	if !errors.Is(err, ErrUnavailable) && errors.Is(c.ctx.Err(), context.DeadlineExceeded) && c.parent.Err() == nil {
		err = fmt.Errorf("%w: %s did not finish within %v: %w", ErrUnavailable, c.op, i.timeout, err)
	}
	if !isNotFoundOrStale(err) {
		i.errors.WithLabelValues(c.op).Inc()
	}
	return err
}

// UpsertRecord implements Store.
func (i *Instrumented) UpsertRecord(ctx context.Context, l Listing) error {
	call := i.begin(ctx, "upsert_record")
	err := i.next.UpsertRecord(call.ctx, l)
	return i.end(call, err)
}

// GetAgent implements Store.
func (i *Instrumented) GetAgent(ctx context.Context, id string) (Listing, error) {
	call := i.begin(ctx, "get_agent")
	r0, err := i.next.GetAgent(call.ctx, id)
	return r0, i.end(call, err)
}

// SearchAgents implements Store.
func (i *Instrumented) SearchAgents(ctx context.Context, q SearchQuery) (SearchPage, error) {
	call := i.begin(ctx, "search_agents")
	r0, err := i.next.SearchAgents(call.ctx, q)
	return r0, i.end(call, err)
}

// RecentAgents implements Store.
func (i *Instrumented) RecentAgents(ctx context.Context, limit int) ([]Listing, error) {
	call := i.begin(ctx, "recent_agents")
	r0, err := i.next.RecentAgents(call.ctx, limit)
	return r0, i.end(call, err)
}

// ListTags implements Store.
func (i *Instrumented) ListTags(ctx context.Context, limit int) ([]TagCount, error) {
	call := i.begin(ctx, "list_tags")
	r0, err := i.next.ListTags(call.ctx, limit)
	return r0, i.end(call, err)
}

// Stats implements Store.
func (i *Instrumented) Stats(ctx context.Context) (Stats, error) {
	call := i.begin(ctx, "stats")
	r0, err := i.next.Stats(call.ctx)
	return r0, i.end(call, err)
}

// CountByStatus implements Store.
func (i *Instrumented) CountByStatus(ctx context.Context) (map[string]int, error) {
	call := i.begin(ctx, "count_by_status")
	r0, err := i.next.CountByStatus(call.ctx)
	return r0, i.end(call, err)
}

// ListLocal implements Store.
func (i *Instrumented) ListLocal(ctx context.Context) ([]Listing, error) {
	call := i.begin(ctx, "list_local")
	r0, err := i.next.ListLocal(call.ctx)
	return r0, i.end(call, err)
}

// SetHostStatus implements Store.
func (i *Instrumented) SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error) {
	call := i.begin(ctx, "set_host_status")
	r0, err := i.next.SetHostStatus(call.ctx, hostPeerID, status, lastSeen)
	return r0, i.end(call, err)
}

// ExpireListings implements Store.
func (i *Instrumented) ExpireListings(ctx context.Context, now time.Time) (int, error) {
	call := i.begin(ctx, "expire_listings")
	r0, err := i.next.ExpireListings(call.ctx, now)
	return r0, i.end(call, err)
}

// PutBackend implements Store.
func (i *Instrumented) PutBackend(ctx context.Context, agentID string, b agent.Backend) error {
	call := i.begin(ctx, "put_backend")
	err := i.next.PutBackend(call.ctx, agentID, b)
	return i.end(call, err)
}

// GetBackend implements Store.
func (i *Instrumented) GetBackend(ctx context.Context, agentID string) (agent.Backend, error) {
	call := i.begin(ctx, "get_backend")
	r0, err := i.next.GetBackend(call.ctx, agentID)
	return r0, i.end(call, err)
}

// DeleteBackend implements Store.
func (i *Instrumented) DeleteBackend(ctx context.Context, agentID string) error {
	call := i.begin(ctx, "delete_backend")
	err := i.next.DeleteBackend(call.ctx, agentID)
	return i.end(call, err)
}

// UpsertNode implements Store.
func (i *Instrumented) UpsertNode(ctx context.Context, n Node) error {
	call := i.begin(ctx, "upsert_node")
	err := i.next.UpsertNode(call.ctx, n)
	return i.end(call, err)
}

// ListNodes implements Store.
func (i *Instrumented) ListNodes(ctx context.Context) ([]Node, error) {
	call := i.begin(ctx, "list_nodes")
	r0, err := i.next.ListNodes(call.ctx)
	return r0, i.end(call, err)
}

// CreateUser implements Store.
func (i *Instrumented) CreateUser(ctx context.Context, handle, passwordHash string) (User, error) {
	call := i.begin(ctx, "create_user")
	r0, err := i.next.CreateUser(call.ctx, handle, passwordHash)
	return r0, i.end(call, err)
}

// GetUserByHandle implements Store.
func (i *Instrumented) GetUserByHandle(ctx context.Context, handle string) (User, error) {
	call := i.begin(ctx, "get_user_by_handle")
	r0, err := i.next.GetUserByHandle(call.ctx, handle)
	return r0, i.end(call, err)
}

// GetUserByID implements Store.
func (i *Instrumented) GetUserByID(ctx context.Context, id int64) (User, error) {
	call := i.begin(ctx, "get_user_by_i_d")
	r0, err := i.next.GetUserByID(call.ctx, id)
	return r0, i.end(call, err)
}

// CreateAPIToken implements Store.
func (i *Instrumented) CreateAPIToken(ctx context.Context, userID int64, name string, hash []byte) (APIToken, error) {
	call := i.begin(ctx, "create_a_p_i_token")
	r0, err := i.next.CreateAPIToken(call.ctx, userID, name, hash)
	return r0, i.end(call, err)
}

// ListAPITokens implements Store.
func (i *Instrumented) ListAPITokens(ctx context.Context, userID int64) ([]APIToken, error) {
	call := i.begin(ctx, "list_a_p_i_tokens")
	r0, err := i.next.ListAPITokens(call.ctx, userID)
	return r0, i.end(call, err)
}

// UseAPIToken implements Store.
func (i *Instrumented) UseAPIToken(ctx context.Context, hash []byte, now time.Time) (APIToken, User, error) {
	call := i.begin(ctx, "use_a_p_i_token")
	r0, r1, err := i.next.UseAPIToken(call.ctx, hash, now)
	return r0, r1, i.end(call, err)
}

// DeleteAPIToken implements Store.
func (i *Instrumented) DeleteAPIToken(ctx context.Context, userID, tokenID int64) error {
	call := i.begin(ctx, "delete_a_p_i_token")
	err := i.next.DeleteAPIToken(call.ctx, userID, tokenID)
	return i.end(call, err)
}

// SessionFind implements Store.
func (i *Instrumented) SessionFind(ctx context.Context, token string) ([]byte, bool, error) {
	call := i.begin(ctx, "session_find")
	r0, r1, err := i.next.SessionFind(call.ctx, token)
	return r0, r1, i.end(call, err)
}

// SessionCommit implements Store.
func (i *Instrumented) SessionCommit(ctx context.Context, token string, data []byte, expiry time.Time) error {
	call := i.begin(ctx, "session_commit")
	err := i.next.SessionCommit(call.ctx, token, data, expiry)
	return i.end(call, err)
}

// SessionDelete implements Store.
func (i *Instrumented) SessionDelete(ctx context.Context, token string) error {
	call := i.begin(ctx, "session_delete")
	err := i.next.SessionDelete(call.ctx, token)
	return i.end(call, err)
}

// SessionDeleteExpired implements Store.
func (i *Instrumented) SessionDeleteExpired(ctx context.Context, now time.Time) error {
	call := i.begin(ctx, "session_delete_expired")
	err := i.next.SessionDeleteExpired(call.ctx, now)
	return i.end(call, err)
}

// CreateConversation implements Store.
func (i *Instrumented) CreateConversation(ctx context.Context, c Conversation) (Conversation, error) {
	call := i.begin(ctx, "create_conversation")
	r0, err := i.next.CreateConversation(call.ctx, c)
	return r0, i.end(call, err)
}

// GetConversation implements Store.
func (i *Instrumented) GetConversation(ctx context.Context, id string) (Conversation, error) {
	call := i.begin(ctx, "get_conversation")
	r0, err := i.next.GetConversation(call.ctx, id)
	return r0, i.end(call, err)
}

// ListConversations implements Store.
func (i *Instrumented) ListConversations(ctx context.Context, ownerKey string, limit int) ([]Conversation, error) {
	call := i.begin(ctx, "list_conversations")
	r0, err := i.next.ListConversations(call.ctx, ownerKey, limit)
	return r0, i.end(call, err)
}

// AppendMessage implements Store.
func (i *Instrumented) AppendMessage(ctx context.Context, m Message) (Message, error) {
	call := i.begin(ctx, "append_message")
	r0, err := i.next.AppendMessage(call.ctx, m)
	return r0, i.end(call, err)
}

// ListMessages implements Store.
func (i *Instrumented) ListMessages(ctx context.Context, conversationID string, limit int) ([]Message, error) {
	call := i.begin(ctx, "list_messages")
	r0, err := i.next.ListMessages(call.ctx, conversationID, limit)
	return r0, i.end(call, err)
}

// Ping implements Store.
func (i *Instrumented) Ping(ctx context.Context) error {
	call := i.begin(ctx, "ping")
	err := i.next.Ping(call.ctx)
	return i.end(call, err)
}

// Close closes the wrapped store.
func (i *Instrumented) Close() error { return i.next.Close() }

func isNotFoundOrStale(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrStale)
}

// CatalogueEnvelopes implements Store.
func (i *Instrumented) CatalogueEnvelopes(ctx context.Context, after int64, tag string, limit int, now time.Time) ([][]byte, int64, error) {
	call := i.begin(ctx, "catalogue_envelopes")
	r0, r1, err := i.next.CatalogueEnvelopes(call.ctx, after, tag, limit, now)
	return r0, r1, i.end(call, err)
}
