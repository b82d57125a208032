// Package registry is the use case of this node's own agents: register,
// update, delete (tombstone) and refresh (re-sign) them, the seq rule and
// who may manage what, and finding any listing by id, from the cache or
// the network. It speaks no protocol: every surface (pages, API, MCP, the
// demo) calls it and maps its errors once.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// Store is what the registry reads and writes.
type Store interface {
	GetAgent(ctx context.Context, id string) (store.Listing, error)
	// LocalRefs and CountLocal read this node's listings a page or a
	// count at a time (Refresh, RefreshTick).
	LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error)
	CountLocal(ctx context.Context) (store.LocalCount, error)
	GetBackend(ctx context.Context, id string) (agent.Backend, error)
	PutBackend(ctx context.Context, id string, b agent.Backend) error
	DeleteBackend(ctx context.Context, id string) error
}

// Publisher signs records with the node key and sends them down the one
// road every listing takes (the sink and, with p2p, the network).
type Publisher interface {
	// AgentID is the id a record named name gets when this node publishes it.
	AgentID(name string) (string, error)
	// Publish fills publisher and id, signs, verifies and delivers rec.
	Publish(ctx context.Context, rec *agent.Record) error
}

// Network finds a record the cache lacks (the DHT); nil: cache only.
type Network interface {
	Lookup(ctx context.Context, id string) (*agent.Record, error)
}

// Schedule hears of every change the registry makes to this node's
// agents (the Prober), so it need not walk them all to learn of one: a
// new or changed agent is probed at once, a deleted one no longer.
type Schedule interface {
	AgentChanged(id, kind string)
	AgentDeleted(id string)
}

// Registry is this node's agents. Set every field but Network and
// Schedule (optional), Logger and Now (defaults) before use.
type Registry struct {
	Store     Store
	Publisher Publisher
	Network   Network
	// Schedule, if set, hears every agent created, changed or deleted.
	Schedule Schedule
	// PeerID is this node's peer ID: the host of every agent it registers.
	PeerID string
	// TTL is the lifetime of the records this node signs.
	TTL time.Duration
	// AllowPrivate lets backends live on loopback and private addresses
	// (--allow-private-endpoints).
	AllowPrivate bool
	// AllowEndpoints lets backends live at these endpoints of the
	// operator's own networks (--allow-endpoint), and nowhere else private.
	AllowEndpoints runtime.AllowList
	Logger         *slog.Logger
	Now            func() time.Time
}

// Actor is who asks for a change: a portal account (by handle) or the
// node's operator.
type Actor struct {
	Owner    string // the account handle; "" for the operator
	Operator bool
}

// checkOrigin refuses an origin (an upstream identity, which exports
// use as the listing's name) from anyone but the operator: imports are the
// operator's, and an account could otherwise take another project's name.
func checkOrigin(a Actor, in Input) error {
	if in.Origin != nil && !a.Operator {
		return fieldError("origin", "only the node's operator imports listings with an upstream origin")
	}
	return nil
}

// Operator is the node's operator.
var Operator = Actor{Operator: true}

// CanManage reports whether a may update or delete l: a local listing it
// owns, or any local listing for the operator.
func (a Actor) CanManage(l store.Listing) bool {
	if !l.Local {
		return false
	}
	return a.Operator || (a.Owner != "" && l.Record.Owner == a.Owner)
}

// Errors of the registry.
var (
	// ErrNoAgent: no agent has this id (or it is malformed).
	ErrNoAgent = agent.NewError(agent.KindNotFound, agent.CodeNotFound, "No agent has this id.")
	// ErrAgentGone: the agent was deleted by its publisher.
	ErrAgentGone = agent.NewError(agent.KindGone, agent.CodeAgentDeleted, "This agent was deleted by its publisher.")
	// ErrNotYours: the actor may not manage this agent.
	ErrNotYours = agent.NewError(agent.KindForbidden, agent.CodeForbidden, "You can only change agents you registered on this node.")
	// ErrNameTaken: EnsureOperatorAgent found the name held by a user's
	// agent (or its tombstone) on this node.
	ErrNameTaken = agent.NewError(agent.KindConflict, agent.CodeConflict, "The name belongs to an agent of a user of this node.")
	// ErrOtherReplica: the agent is hosted by another node sharing this
	// node's database (a replica of the same portal); only its key can
	// sign a new version.
	ErrOtherReplica = agent.NewError(agent.KindConflict, agent.CodeConflict,
		"This agent is hosted by another node of this portal (its key signs it); change it through that node.")
)

// signable refuses a change to l when this node cannot sign it: a listing
// another replica of the portal published into the shared database.
func (r *Registry) signable(l store.Listing) error {
	if l.Record.Publisher != r.PeerID {
		return ErrOtherReplica.Wrap(fmt.Errorf("agent %s is published by %s", l.Record.ID, l.Record.Publisher))
	}
	return nil
}

// Field errors of a registration.
const (
	msgNameInUse = "an agent with this name is already registered on this node"
	// MsgNameReserved is the field error for a name whose deleted agent
	// belonged to another account.
	MsgNameReserved = "this name belonged to a deleted agent of another account; choose another name"
	msgNameFixed    = "the name of a registered agent cannot change"
)

// BackendPolicy is what this node's agent backends may reach: the one
// rule registration and the Test backend button check a URL against.
func (r *Registry) BackendPolicy() runtime.Policy {
	return runtime.Policy{Private: r.AllowPrivate, Allow: r.AllowEndpoints}
}

func (r *Registry) now() time.Time {
	if r.Now == nil {
		return time.Now().UTC()
	}
	return r.Now().UTC()
}

func (r *Registry) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

func fieldError(field, msg string) error {
	return &agent.ValidationError{Fields: map[string]string{field: msg}}
}

// Create registers a new agent for a. A name in use, or deleted by another
// account (its id, derived from the node key and the name, would carry the
// old agent's conversations), is refused as a field error.
func (r *Registry) Create(ctx context.Context, a Actor, in Input) (store.Listing, error) {
	in.normalize()
	if err := checkOrigin(a, in); err != nil {
		return store.Listing{}, err
	}
	id, err := r.Publisher.AgentID(in.Name)
	if err != nil {
		return store.Listing{}, fmt.Errorf("derive agent id: %w", err)
	}
	var prevSeq uint64
	prev, err := r.Store.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return store.Listing{}, fmt.Errorf("look up agent: %w", err)
	case !prev.Record.Tombstone:
		return store.Listing{}, fieldError("name", msgNameInUse)
	case !a.Operator && prev.Record.Owner != a.Owner:
		return store.Listing{}, fieldError("name", MsgNameReserved)
	default:
		prevSeq = prev.Record.Seq
	}
	return r.publish(ctx, id, a.Owner, prevSeq, in, nil)
}

// Update changes agent id, which a must manage; its name cannot change
// (the id derives from it). A blank LLM key keeps the stored one: forms
// never render a key back.
func (r *Registry) Update(ctx context.Context, a Actor, id string, in Input) (store.Listing, error) {
	in.normalize()
	if err := checkOrigin(a, in); err != nil {
		return store.Listing{}, err
	}
	prev, err := r.getLive(ctx, id)
	if err != nil {
		return store.Listing{}, err
	}
	if !a.CanManage(prev) {
		return store.Listing{}, ErrNotYours
	}
	if err := r.signable(prev); err != nil {
		return store.Listing{}, err
	}
	newID, err := r.Publisher.AgentID(in.Name)
	if err != nil {
		return store.Listing{}, fmt.Errorf("derive agent id: %w", err)
	}
	if newID != id {
		return store.Listing{}, fieldError("name", msgNameFixed)
	}
	old, err := r.Store.GetBackend(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return store.Listing{}, fmt.Errorf("load backend: %w", err)
	}
	var kept *agent.Backend
	if err == nil {
		kept = &old
		in.Backend = KeepKey(in.Backend, old)
	}
	return r.publish(ctx, id, prev.Record.Owner, prev.Record.Seq, in, kept)
}

// publish validates, stores the backend and publishes the record. The
// backend is stored first, so the agent answers as soon as anyone sees it;
// if publishing fails, the previous backend (old, or none) is put back.
func (r *Registry) publish(ctx context.Context, id, owner string, prevSeq uint64, in Input, old *agent.Backend) (store.Listing, error) {
	rec, err := r.sign(ctx, id, owner, prevSeq, in, old)
	if err != nil {
		return store.Listing{}, err
	}
	now := rec.IssuedAt
	// Stored: from here on the answer is a success, whatever the read-back
	// does (an error now would refuse a registration that was made).
	l, err := r.Store.GetAgent(ctx, id)
	if err != nil {
		r.logger().WarnContext(ctx, "reading a saved agent back failed; answering from its record", "id", id, "err", err)
		return store.Listing{Record: *rec, Status: store.StatusOnline, LastSeen: now, HostPeerID: rec.HostPeerID(), Local: true, UpdatedAt: now}, nil
	}
	return l, nil
}

// sign validates, stores the backend and publishes the record (publish
// without the read-back).
func (r *Registry) sign(ctx context.Context, id, owner string, prevSeq uint64, in Input, old *agent.Backend) (*agent.Record, error) {
	rec, err := r.newRecord(id, owner, prevSeq, in)
	if err != nil {
		return nil, err
	}
	if err := r.deliver(ctx, rec, in.Backend, old); err != nil {
		return nil, err
	}
	return rec, nil
}

// newRecord builds and validates the record of in, at seq past prevSeq;
// it writes nothing.
func (r *Registry) newRecord(id, owner string, prevSeq uint64, in Input) (*agent.Record, error) {
	now := r.now()
	rec := &agent.Record{
		ID:          id,
		Name:        in.Name,
		DisplayName: in.DisplayName,
		Description: in.Description,
		Tags:        in.Tags,
		Skills:      in.Skills,
		Version:     in.Version,
		Origin:      in.Origin,
		Publisher:   r.PeerID,
		Owner:       owner,
		Endpoints:   []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: r.PeerID, Protocol: agent.MCPProtocol}},
		Seq:         NextSeq(prevSeq, now.UnixMicro()),
		IssuedAt:    now,
		ExpiresAt:   now.Add(r.TTL),
	}
	if err := validate(rec, in.Backend, now, r.BackendPolicy()); err != nil {
		return nil, err
	}
	return rec, nil
}

// FreshPublisher is a Publisher that can skip verifying the signature it
// just made (the bulk import's path: the record is still decoded from the
// envelope and its fields checked as Open would). A batch seals many
// records in parallel (SealFresh), stores them in order in its
// transaction (store.PutOwn, the Sink's rule for this node's records) and
// announces them once it committed (Announce).
type FreshPublisher interface {
	SealFresh(rec *agent.Record) (env []byte, opened *agent.Record, err error)
	Announce(ctx context.Context, opened *agent.Record, env []byte) error
}

// deliver stores rec's backend and publishes rec (without the read-back).
func (r *Registry) deliver(ctx context.Context, rec *agent.Record, b agent.Backend, old *agent.Backend) error {
	if err := r.Store.PutBackend(ctx, rec.ID, b); err != nil {
		return fmt.Errorf("store backend: %w", err)
	}
	if err := r.Publisher.Publish(ctx, rec); err != nil {
		r.restoreBackend(context.Background(), r.Store, rec.ID, old)
		return fmt.Errorf("publish agent: %w", err)
	}
	r.changed(rec.ID, b.Kind)
	return nil
}

// changed tells the Schedule, if any, that agent id changed.
func (r *Registry) changed(id, kind string) {
	if r.Schedule != nil {
		r.Schedule.AgentChanged(id, kind)
	}
}

// backendWriter is where restoreBackend puts a backend back: the store,
// or a batch's transaction (store.Tx).
type backendWriter interface {
	PutBackend(ctx context.Context, id string, b agent.Backend) error
	DeleteBackend(ctx context.Context, id string) error
}

// restoreBackend undoes PutBackend on w after a failed publish, on a
// fresh context (the caller's may be what failed).
func (r *Registry) restoreBackend(parent context.Context, w backendWriter, id string, old *agent.Backend) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), 5*time.Second)
	defer cancel()
	var err error
	if old != nil {
		err = w.PutBackend(ctx, id, *old)
	} else {
		err = w.DeleteBackend(ctx, id)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		r.logger().Error("restoring an agent backend after a failed publish failed", "id", id, "err", err)
	}
}

// Delete publishes a tombstone (the record with a higher seq) for agent
// id, which a must manage, and drops its backend settings.
func (r *Registry) Delete(ctx context.Context, a Actor, id string) error {
	prev, err := r.getLive(ctx, id)
	if err != nil {
		return err
	}
	if !a.CanManage(prev) {
		return ErrNotYours
	}
	if err := r.signable(prev); err != nil {
		return err
	}
	now := r.now()
	rec := prev.Record
	rec.Tombstone = true
	rec.Seq = NextSeq(prev.Record.Seq, now.UnixMicro())
	rec.IssuedAt = now
	rec.ExpiresAt = now.Add(r.TTL)
	if err := r.Publisher.Publish(ctx, &rec); err != nil {
		return fmt.Errorf("publish tombstone: %w", err)
	}
	if r.Schedule != nil {
		r.Schedule.AgentDeleted(id)
	}
	if err := r.Store.DeleteBackend(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete backend: %w", err)
	}
	return nil
}

// getLive loads a listing from the cache that is not deleted.
func (r *Registry) getLive(ctx context.Context, id string) (store.Listing, error) {
	l, err := r.Store.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Listing{}, ErrNoAgent
	case err != nil:
		return store.Listing{}, fmt.Errorf("look up agent: %w", err)
	case l.Record.Tombstone:
		return store.Listing{}, ErrNoAgent
	}
	return l, nil
}

// EnsureOperatorAgent registers in under the operator, or, if this node
// already hosts an operator's agent of that name, publishes it afresh (new
// seq and expiry). The demo agents are published this way at every start.
// A name a user took (or took and deleted) is theirs: it returns
// ErrNameTaken and changes nothing.
func (r *Registry) EnsureOperatorAgent(ctx context.Context, in Input) (store.Listing, error) {
	in.normalize()
	id, err := r.Publisher.AgentID(in.Name)
	if err != nil {
		return store.Listing{}, fmt.Errorf("derive agent id: %w", err)
	}
	l, err := r.Store.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return r.Create(ctx, Operator, in)
	case err != nil:
		return store.Listing{}, fmt.Errorf("look up agent %q: %w", in.Name, err)
	case l.Record.Owner != "":
		return store.Listing{}, ErrNameTaken.Wrap(fmt.Errorf("%q is %s's", in.Name, l.Record.Owner))
	case l.Record.Tombstone:
		return r.Create(ctx, Operator, in)
	}
	return r.Update(ctx, Operator, id, in)
}

// Refresh re-signs every local listing this node signed that expires
// within window with a new seq and expiry, so this node's agents never
// lapse while it runs. It returns how many listings it refreshed.
// RefreshDue bounds the work; the loop (RunRefresh) spreads it.
func (r *Registry) Refresh(ctx context.Context, window time.Duration) (int, error) {
	return r.RefreshDue(ctx, window, 0)
}

// RefreshDue re-signs at most limit (0: no limit) of the local listings
// this node signed that expire within window, the first to expire first.
// It reads the due ones only, a page of refs at a time, and each due
// record once: never every listing in full (a host of 100k agents timed
// out doing that). Another replica's agents (a shared
// database) are its to re-sign.
func (r *Registry) RefreshDue(ctx context.Context, window time.Duration, limit int) (int, error) {
	now := r.now()
	q := store.LocalQuery{DueBefore: now.Add(window), Publisher: r.PeerID}
	n := 0
	for limit <= 0 || n < limit {
		q.Limit = store.MaxLocalPage
		if limit > 0 {
			q.Limit = min(q.Limit, limit-n)
		}
		refs, err := r.Store.LocalRefs(ctx, q)
		if err != nil {
			return n, fmt.Errorf("list due local agents: %w", err)
		}
		for _, ref := range refs {
			done, err := r.refreshOne(ctx, ref.ID, now)
			if err != nil {
				return n, err
			}
			if done {
				n++
			}
		}
		if len(refs) < q.Limit {
			break
		}
		last := refs[len(refs)-1]
		q.After, q.AfterExpiry = last.ID, last.ExpiresAt
	}
	return n, nil
}

// refreshOne re-signs local listing id at now, unless it changed since it
// was found due (deleted, gone, signed by another replica).
func (r *Registry) refreshOne(ctx context.Context, id string, now time.Time) (bool, error) {
	l, err := r.Store.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("refresh %s: %w", id, err)
	case !l.Local || l.Record.Tombstone || l.Record.Publisher != r.PeerID:
		return false, nil
	}
	rec := l.Record
	rec.Seq = NextSeq(rec.Seq, now.UnixMicro())
	rec.IssuedAt = now
	rec.ExpiresAt = now.Add(r.TTL)
	if err := r.Publisher.Publish(ctx, &rec); err != nil {
		return false, fmt.Errorf("refresh %s: %w", rec.ID, err)
	}
	return true, nil
}

// NextSeq is at least prev+1 and at least the clock in microseconds, so a
// node that lost its database still publishes seqs above its old ones.
func NextSeq(prev uint64, nowMicro int64) uint64 {
	if nowMicro > 0 && uint64(nowMicro) > prev {
		return uint64(nowMicro)
	}
	return prev + 1
}
