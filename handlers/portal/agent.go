package portal

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// getListing finds the listing of the {id} URL parameter.
func (p *Pages) getListing(r *http.Request) (store.Listing, error) {
	return p.Registry.Find(r.Context(), chi.URLParam(r, "id"))
}

// PageAgent shows one listing, looked up in the network if the cache
// lacks it; its owner gets the edit and delete buttons.
func (p *Pages) PageAgent(w http.ResponseWriter, r *http.Request) {
	l, err := p.getListing(r)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	u := p.viewer(r)
	rec := l.Record
	v := web.AgentView{
		Page:        p.page(r, u, rec.DisplayName, "agents"),
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
		LastSeenAgo: web.Ago(l.LastSeen, p.now()),
		Health:      web.HealthOf(l.Health, p.now()),
		HostPeerID:  l.HostPeerID,
		Local:       l.Local,
		CanManage:   u != nil && httpkit.Principal{User: u}.Actor().CanManage(l),
		ChatURL:     web.ChatHref(rec.ID, ""),

		MixedScripts: agent.MixedScripts(rec.DisplayName),
	}
	p.render(w, r, http.StatusOK, web.AgentPage(v))
}
