package portal

import (
	"net/http"

	"github.com/agentsite/agentsite/web"
)

// Home page sizes: one screen of cards and a tag cloud.
const (
	homeRecent = 9
	homeTags   = 24
)

// PageHome is the front page: counts, the newest agents, the top tags.
func (p *Pages) PageHome(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	stats, err := p.Catalog.Stats(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	recent, err := p.Catalog.RecentAgents(ctx, homeRecent)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	tags, err := p.Catalog.ListTags(ctx, homeTags)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	// Counted as the Network page counts: every node heard from or
	// connected, and this one; in SQL, not by loading the nodes.
	known, err := p.netKnown(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	local, err := p.Catalog.CountLocal(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := web.HomeView{
		Page:    p.page(r, p.viewer(r), "", "home"),
		Agents:  stats.Agents,
		Online:  stats.OnlineAgents,
		Tags:    stats.Tags,
		Nodes:   known.total,
		Recent:  p.cards(r.Context(), recent),
		TopTags: tagCounts(tags),
	}
	v.SyncHeld, v.SyncAnnounced, v.Syncing = p.syncing(stats.Agents, local.N)
	p.render(w, r, http.StatusOK, web.HomePage(v))
}
