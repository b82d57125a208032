package handlers

import (
	"net/http"

	"github.com/agentsite/agentsite/web"
)

// Home page sizes: one screen of cards and a tag cloud.
const (
	homeRecent = 9
	homeTags   = 24
)

func (s *Server) pageHome(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	stats, err := s.Store.Stats(ctx)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	recent, err := s.Store.RecentAgents(ctx, homeRecent)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	tags, err := s.Store.ListTags(ctx, homeTags)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	v := web.HomeView{
		Page:    s.page(r, s.viewer(r), "", "home"),
		Agents:  stats.Agents,
		Online:  stats.OnlineAgents,
		Tags:    stats.Tags,
		Nodes:   stats.Nodes,
		Recent:  s.cards(recent),
		TopTags: tagCounts(tags),
	}
	s.render(w, r, http.StatusOK, web.HomePage(v))
}
