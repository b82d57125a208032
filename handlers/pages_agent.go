package handlers

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

var (
	errNoSuchAgent = errorf(http.StatusNotFound, "not_found", "No agent has this id.")
	errAgentGone   = errorf(http.StatusGone, "deleted", "This agent was deleted by its publisher.")
)

// loadListing loads a listing by id for every surface (pages, API, MCP,
// chat), asking the network if the cache lacks it: errNoSuchAgent for a
// malformed or unknown id, errAgentGone for a deleted agent.
func (s *Server) loadListing(ctx context.Context, id string) (store.Listing, error) {
	if !agent.ValidID(id) {
		return store.Listing{}, errNoSuchAgent
	}
	l, err := s.getOrLookup(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Listing{}, errNoSuchAgent
	case err != nil:
		return store.Listing{}, err
	case l.Record.Tombstone:
		return store.Listing{}, errAgentGone
	}
	return l, nil
}

// getListing is loadListing for the {id} URL parameter.
func (s *Server) getListing(r *http.Request) (store.Listing, error) {
	return s.loadListing(r.Context(), chi.URLParam(r, "id"))
}

func (s *Server) pageAgent(w http.ResponseWriter, r *http.Request) {
	l, err := s.getListing(r)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	u := s.viewer(r)
	rec := l.Record
	v := web.AgentView{
		Page:        s.page(r, u, rec.DisplayName, "agents"),
		ID:          rec.ID,
		Name:        rec.Name,
		DisplayName: rec.DisplayName,
		Description: rec.Description,
		Tags:        rec.Tags,
		Skills:      rec.Skills,
		Version:     rec.Version,
		Publisher:   rec.Publisher,
		Owner:       rec.Owner,
		Endpoints:   rec.Endpoints,
		Seq:         rec.Seq,
		IssuedAt:    rec.IssuedAt,
		ExpiresAt:   rec.ExpiresAt,
		Status:      l.Status,
		LastSeen:    l.LastSeen,
		LastSeenAgo: web.Ago(l.LastSeen, s.now()),
		HostPeerID:  l.HostPeerID,
		Local:       l.Local,
		CanManage:   u != nil && Principal{User: u}.CanManage(l),
		ChatURL:     web.ChatHref(rec.ID, ""),

		MixedScripts: agent.MixedScripts(rec.DisplayName),
	}
	s.render(w, r, http.StatusOK, web.AgentPage(v))
}
