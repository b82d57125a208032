package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// AgentJSON is the API view of a listing: the record's public fields plus
// what this node knows about it. Backend settings never appear here.
type AgentJSON struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	DisplayName string           `json:"display_name"`
	Description string           `json:"description"`
	Tags        []string         `json:"tags"`
	Skills      []agent.Skill    `json:"skills"`
	Version     string           `json:"version"`
	Publisher   string           `json:"publisher"`
	Owner       string           `json:"owner,omitempty"`
	Endpoints   []agent.Endpoint `json:"endpoints"`
	Seq         uint64           `json:"seq"`
	IssuedAt    time.Time        `json:"issued_at"`
	ExpiresAt   time.Time        `json:"expires_at"`
	Tombstone   bool             `json:"tombstone,omitempty"`
	Status      string           `json:"status"`
	LastSeen    time.Time        `json:"last_seen"`
	HostPeerID  string           `json:"host_peer_id"`
	Local       bool             `json:"local"`
}

func toAgentJSON(l store.Listing) AgentJSON {
	r := l.Record
	tags, skills, eps := r.Tags, r.Skills, r.Endpoints
	if tags == nil {
		tags = []string{}
	}
	if skills == nil {
		skills = []agent.Skill{}
	}
	if eps == nil {
		eps = []agent.Endpoint{}
	}
	return AgentJSON{
		ID: r.ID, Name: r.Name, DisplayName: r.DisplayName, Description: r.Description,
		Tags: tags, Skills: skills, Version: r.Version, Publisher: r.Publisher, Owner: r.Owner,
		Endpoints: eps, Seq: r.Seq, IssuedAt: r.IssuedAt, ExpiresAt: r.ExpiresAt, Tombstone: r.Tombstone,
		Status: l.Status, LastSeen: l.LastSeen, HostPeerID: l.HostPeerID, Local: l.Local,
	}
}

type agentListJSON struct {
	Agents     []AgentJSON `json:"agents"`
	NextCursor string      `json:"next_cursor"`
}

var validStatuses = map[string]bool{store.StatusOnline: true, store.StatusStale: true, store.StatusOffline: true}

// parseSearchQuery reads q, tag (repeatable or comma-separated), status
// (repeatable, comma-separated or "all"), limit and cursor.
func parseSearchQuery(r *http.Request) (store.SearchQuery, error) {
	v := r.URL.Query()
	q := store.SearchQuery{Q: v.Get("q"), Cursor: v.Get("cursor")}
	fields := map[string]string{}
	if len(q.Q) > 256 {
		fields["q"] = "at most 256 bytes"
	}
	for _, raw := range v["tag"] {
		for _, t := range strings.Split(raw, ",") {
			if t = strings.ToLower(strings.TrimSpace(t)); t == "" {
				continue
			}
			if !agent.IsSlug(t, 1, agent.MaxTagLen) {
				fields["tag"] = fmt.Sprintf("%q is not a tag", t)
				continue
			}
			q.Tags = append(q.Tags, t)
		}
	}
	if len(q.Tags) > agent.MaxTags {
		fields["tag"] = fmt.Sprintf("at most %d tags", agent.MaxTags)
	}
	for _, raw := range v["status"] {
		for _, st := range strings.Split(raw, ",") {
			st = strings.TrimSpace(st)
			switch {
			case st == "":
			case st == "all":
				q.Statuses = []string{store.StatusOnline, store.StatusStale, store.StatusOffline}
			case validStatuses[st]:
				q.Statuses = append(q.Statuses, st)
			default:
				fields["status"] = "must be online, stale, offline or all"
			}
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > store.MaxLimit {
			fields["limit"] = fmt.Sprintf("must be a number from 1 to %d", store.MaxLimit)
		}
		q.Limit = n
	}
	if _, _, err := store.DecodeCursor(q.Cursor); err != nil {
		fields["cursor"] = "is invalid; start again without one"
	}
	if len(fields) > 0 {
		return q, &agent.ValidationError{Fields: fields}
	}
	q.Limit = store.NormalizeLimit(q.Limit)
	return q, nil
}

func (s *Server) apiListAgents(w http.ResponseWriter, r *http.Request) {
	q, err := parseSearchQuery(r)
	if err != nil {
		s.renderError(w, r, badQuery(err))
		return
	}
	page, err := s.Store.SearchAgents(r.Context(), q)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	out := agentListJSON{Agents: make([]AgentJSON, 0, len(page.Listings)), NextCursor: page.NextCursor}
	for _, l := range page.Listings {
		out.Agents = append(out.Agents, toAgentJSON(l))
	}
	httpkit.WriteJSON(w, http.StatusOK, out)
}

// badQuery turns query-string validation errors into a 400 (not a 422: the
// request itself is malformed, not a submitted entity).
func badQuery(err error) error {
	var ve *agent.ValidationError
	if errors.As(err, &ve) {
		return &httpkit.Error{Status: http.StatusBadRequest, Code: "bad_query", Message: "Some query parameters are invalid; see fields.", Fields: ve.Fields}
	}
	return err
}

func (s *Server) apiGetAgent(w http.ResponseWriter, r *http.Request) {
	l, err := s.getListing(r)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, toAgentJSON(l))
}

func (s *Server) apiCreateAgent(w http.ResponseWriter, r *http.Request) {
	p, err := s.Accounts.Bearer(r)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	var in registry.Input
	if err := httpkit.DecodeJSON(r, &in); err != nil {
		s.renderError(w, r, err)
		return
	}
	l, err := s.Registry.Create(r.Context(), p.Actor(), in)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/agents/"+l.Record.ID)
	httpkit.WriteJSON(w, http.StatusCreated, toAgentJSON(l))
}

// ownedAgentRequest authenticates a write to /api/v1/agents/{id} and checks
// the id's shape; ok is false when it has already answered.
func (s *Server) ownedAgentRequest(w http.ResponseWriter, r *http.Request) (p httpkit.Principal, id string, ok bool) {
	p, err := s.Accounts.Bearer(r)
	if err != nil {
		s.renderError(w, r, err)
		return p, "", false
	}
	id = chi.URLParam(r, "id")
	if !agent.ValidID(id) {
		s.renderError(w, r, registry.ErrNoAgent)
		return p, "", false
	}
	return p, id, true
}

func (s *Server) apiUpdateAgent(w http.ResponseWriter, r *http.Request) {
	p, id, ok := s.ownedAgentRequest(w, r)
	if !ok {
		return
	}
	var in registry.Input
	if err := httpkit.DecodeJSON(r, &in); err != nil {
		s.renderError(w, r, err)
		return
	}
	l, err := s.Registry.Update(r.Context(), p.Actor(), id, in)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, toAgentJSON(l))
}

func (s *Server) apiDeleteAgent(w http.ResponseWriter, r *http.Request) {
	p, id, ok := s.ownedAgentRequest(w, r)
	if !ok {
		return
	}
	if err := s.Registry.Delete(r.Context(), p.Actor(), id); err != nil {
		s.renderError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type networkSearchJSON struct {
	Tag       string `json:"tag"`
	Providers int    `json:"providers"`
	Records   int    `json:"records"`
}

// apiNetworkSearch asks the DHT for providers of a tag and pulls their
// listings with it; then GET /api/v1/agents?tag= shows them.
func (s *Server) apiNetworkSearch(w http.ResponseWriter, r *http.Request) {
	tag := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("tag")))
	if !agent.IsSlug(tag, 1, agent.MaxTagLen) {
		s.renderError(w, r, &httpkit.Error{Status: http.StatusBadRequest, Code: "bad_query", Message: "Give a tag to search the network for.", Fields: map[string]string{"tag": "must be a tag"}})
		return
	}
	providers, changed, err := s.Node.SearchTag(r.Context(), tag, 20)
	if err != nil {
		s.renderError(w, r, httpkit.Errorf(http.StatusServiceUnavailable, "network_unavailable", "The network search failed; try again in a moment."))
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, networkSearchJSON{Tag: tag, Providers: providers, Records: changed})
}
