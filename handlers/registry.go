package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/store"
)

// AgentInput is what a person supplies to register or edit an agent, from
// the /register form or the JSON API alike.
type AgentInput struct {
	Name        string        `json:"name"`
	DisplayName string        `json:"display_name"`
	Description string        `json:"description"`
	Tags        []string      `json:"tags"`
	Skills      []agent.Skill `json:"skills"`
	Version     string        `json:"version"`
	Backend     agent.Backend `json:"backend"`
}

// normalize trims what people type by accident; it never changes meaning.
func (in *AgentInput) normalize() {
	in.Name = strings.ToLower(strings.TrimSpace(in.Name))
	in.DisplayName = strings.TrimSpace(in.DisplayName)
	in.Description = strings.TrimSpace(strings.ReplaceAll(in.Description, "\r\n", "\n"))
	in.Version = strings.TrimSpace(in.Version)
	tags := in.Tags[:0:0]
	for _, t := range in.Tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			tags = append(tags, t)
		}
	}
	in.Tags = tags
	in.Backend.Kind = strings.TrimSpace(in.Backend.Kind)
	in.Backend.URL = strings.TrimSpace(in.Backend.URL)
}

// msgNameReserved is the field error for a name whose deleted agent
// belonged to another account.
const msgNameReserved = "this name belonged to a deleted agent of another account; choose another name"

// saveAgent registers a new agent (existingID == "") or updates one, for
// principal p. The record is signed by the node and delivered through the
// publisher, the same road network records take into the store.
func (s *Server) saveAgent(ctx context.Context, p Principal, in AgentInput, existingID string) (store.Listing, error) {
	in.normalize()
	id, err := s.Publisher.AgentID(in.Name)
	if err != nil {
		return store.Listing{}, fmt.Errorf("derive agent id: %w", err)
	}
	if existingID != "" && existingID != id {
		// Unknown agent first (404), then the rename (422).
		if l, err := s.Store.GetAgent(ctx, existingID); err != nil || l.Record.Tombstone {
			return store.Listing{}, store.ErrNotFound
		}
		return store.Listing{}, &agent.ValidationError{Fields: map[string]string{"name": "the name of a registered agent cannot change"}}
	}
	owner := p.Handle()
	var prevSeq uint64
	prev, err := s.Store.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if existingID != "" {
			return store.Listing{}, store.ErrNotFound
		}
	case err != nil:
		return store.Listing{}, fmt.Errorf("look up agent: %w", err)
	default:
		prevSeq = prev.Record.Seq
		if existingID == "" && !prev.Record.Tombstone {
			return store.Listing{}, &agent.ValidationError{Fields: map[string]string{"name": "an agent with this name is already registered on this node"}}
		}
		if existingID == "" && !p.Operator && prev.Record.Owner != owner {
			// The id is derived from the node's key and the name only: a
			// new owner would inherit it, and with it the old agent's
			// conversations. The tombstone (never swept) keeps the owner.
			return store.Listing{}, &agent.ValidationError{Fields: map[string]string{"name": msgNameReserved}}
		}
		if existingID != "" {
			if prev.Record.Tombstone {
				return store.Listing{}, store.ErrNotFound
			}
			if !p.CanManage(prev) {
				return store.Listing{}, errorf(http.StatusForbidden, "forbidden", "You can only change agents you registered on this node.")
			}
			owner = prev.Record.Owner
		}
	}
	if existingID != "" && in.Backend.Kind == agent.BackendLLM && in.Backend.APIKey == "" {
		// An edit that leaves the key blank keeps the stored key: the
		// form never renders a key back.
		if old, err := s.Store.GetBackend(ctx, id); err == nil {
			in.Backend.APIKey = old.APIKey
		}
	}

	now := s.now()
	rec := &agent.Record{
		ID:          id,
		Name:        in.Name,
		DisplayName: in.DisplayName,
		Description: in.Description,
		Tags:        in.Tags,
		Skills:      in.Skills,
		Version:     in.Version,
		Publisher:   s.Node.PeerID(),
		Owner:       owner,
		Endpoints:   []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: s.Node.PeerID(), Protocol: agent.MCPProtocol}},
		Seq:         nextSeq(prevSeq, now.UnixMicro()),
		IssuedAt:    now,
		ExpiresAt:   now.Add(s.Config.RecordTTL),
	}
	if err := validateInput(rec, in.Backend, now, s.Config.AllowPrivateEndpoints); err != nil {
		return store.Listing{}, err
	}
	// The backend is stored before the record is published, so the agent
	// can answer as soon as anyone sees it; if publishing fails, the
	// previous backend (or none) is put back.
	old, oldErr := s.Store.GetBackend(ctx, id)
	if err := s.Store.PutBackend(ctx, id, in.Backend); err != nil {
		return store.Listing{}, fmt.Errorf("store backend: %w", err)
	}
	if err := s.Publisher.Publish(ctx, rec); err != nil {
		s.restoreBackend(id, old, oldErr)
		return store.Listing{}, fmt.Errorf("publish agent: %w", err)
	}
	// Stored: from here on the answer is a success, whatever the read-back
	// does (a 503 now would refuse a registration that was made).
	l, err := s.Store.GetAgent(ctx, id)
	if err != nil {
		s.Logger.WarnContext(ctx, "reading a saved agent back failed; answering from its record", "id", id, "err", err)
		return store.Listing{Record: *rec, Status: store.StatusOnline, LastSeen: now, HostPeerID: rec.HostPeerID(), Local: true, UpdatedAt: now}, nil
	}
	return l, nil
}

// restoreBackend undoes PutBackend after a failed publish, on a fresh
// context (the request's may be what failed).
func (s *Server) restoreBackend(id string, old agent.Backend, oldErr error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if oldErr == nil {
		err = s.Store.PutBackend(ctx, id, old)
	} else {
		err = s.Store.DeleteBackend(ctx, id)
	}
	if err != nil {
		s.Logger.Error("restoring an agent backend after a failed publish failed", "id", id, "err", err)
	}
}

// deleteAgent publishes a tombstone (a record with a higher seq) for an
// agent p manages, and drops its backend settings.
func (s *Server) deleteAgent(ctx context.Context, p Principal, id string) error {
	prev, err := s.Store.GetAgent(ctx, id)
	if err != nil {
		return err
	}
	if prev.Record.Tombstone {
		return store.ErrNotFound
	}
	if !p.CanManage(prev) {
		return errorf(http.StatusForbidden, "forbidden", "You can only delete agents you registered on this node.")
	}
	now := s.now()
	rec := prev.Record
	rec.Tombstone = true
	rec.Seq = nextSeq(prev.Record.Seq, now.UnixMicro())
	rec.IssuedAt = now
	rec.ExpiresAt = now.Add(s.Config.RecordTTL)
	if err := s.Publisher.Publish(ctx, &rec); err != nil {
		return fmt.Errorf("publish tombstone: %w", err)
	}
	if err := s.Store.DeleteBackend(ctx, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("delete backend: %w", err)
	}
	return nil
}

// nextSeq is at least prev+1 and at least the clock in microseconds, so a
// node that lost its database still publishes seqs above its old ones.
func nextSeq(prev uint64, nowMicro int64) uint64 {
	if nowMicro > 0 && uint64(nowMicro) > prev {
		return uint64(nowMicro)
	}
	return prev + 1
}

// validateInput merges record and backend errors into one ValidationError
// so a form shows every problem at once.
func validateInput(rec *agent.Record, b agent.Backend, now time.Time, allowPrivate bool) error {
	fields := map[string]string{}
	var ve *agent.ValidationError
	if err := rec.Validate(now); errors.As(err, &ve) {
		for k, v := range ve.Fields {
			fields[k] = v
		}
	} else if err != nil {
		return err
	}
	if err := b.Validate(); errors.As(err, &ve) {
		for k, v := range ve.Fields {
			fields[k] = v
		}
	} else if err != nil {
		return err
	}
	if _, bad := fields["backend.url"]; !bad && b.URL != "" {
		if err := runtime.CheckHost(b.URL, allowPrivate); err != nil {
			fields["backend.url"] = err.Error()
		}
	}
	if len(fields) > 0 {
		return &agent.ValidationError{Fields: fields}
	}
	return nil
}

// ErrNameTaken: EnsureOperatorAgent found the name held by a user's agent
// (or its tombstone) on this node.
var ErrNameTaken = errors.New("the name belongs to an agent of a user of this node")

// EnsureOperatorAgent registers in under the operator, or, if this node
// already hosts an operator's agent of that name, publishes it afresh (new
// seq and expiry). The demo agents are published this way at every start.
// A name a user took (or took and deleted) is theirs: it returns
// ErrNameTaken and changes nothing.
func (s *Server) EnsureOperatorAgent(ctx context.Context, in AgentInput) (store.Listing, error) {
	op := Principal{Operator: true}
	id, err := s.Publisher.AgentID(strings.ToLower(strings.TrimSpace(in.Name)))
	if err != nil {
		return store.Listing{}, err
	}
	l, err := s.Store.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return s.saveAgent(ctx, op, in, "")
	case err != nil:
		return store.Listing{}, fmt.Errorf("look up agent %q: %w", in.Name, err)
	case l.Record.Owner != "":
		return store.Listing{}, fmt.Errorf("%w: %q is %s's", ErrNameTaken, in.Name, l.Record.Owner)
	case l.Record.Tombstone:
		return s.saveAgent(ctx, op, in, "")
	}
	return s.saveAgent(ctx, op, in, id)
}

// RefreshLocal re-signs every local listing that expires within window with
// a new seq and expiry, so this node's agents never lapse while it runs.
// It returns how many listings it refreshed.
func (s *Server) RefreshLocal(ctx context.Context, window time.Duration) (int, error) {
	local, err := s.Store.ListLocal(ctx)
	if err != nil {
		return 0, fmt.Errorf("list local agents: %w", err)
	}
	now := s.now()
	n := 0
	for _, l := range local {
		if l.Record.Tombstone || l.Record.ExpiresAt.Sub(now) > window {
			continue
		}
		rec := l.Record
		rec.Seq = nextSeq(rec.Seq, now.UnixMicro())
		rec.IssuedAt = now
		rec.ExpiresAt = now.Add(s.Config.RecordTTL)
		if err := s.Publisher.Publish(ctx, &rec); err != nil {
			return n, fmt.Errorf("refresh %s: %w", rec.ID, err)
		}
		n++
	}
	return n, nil
}
