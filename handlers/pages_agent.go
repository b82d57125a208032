package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// getListing finds the listing of the {id} URL parameter.
func (s *Server) getListing(r *http.Request) (store.Listing, error) {
	return s.Registry.Find(r.Context(), chi.URLParam(r, "id"))
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
		CanManage:   u != nil && httpkit.Principal{User: u}.Actor().CanManage(l),
		ChatURL:     web.ChatHref(rec.ID, ""),

		MixedScripts: agent.MixedScripts(rec.DisplayName),
	}
	s.render(w, r, http.StatusOK, web.AgentPage(v))
}
