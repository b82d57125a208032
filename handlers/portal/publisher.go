package portal

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// publisherPageSize is how many cards a publisher's page shows at once.
const publisherPageSize = 24

// PagePublisher lists one publisher's agents, newest first: every listing
// a node signed, or with ?owner=, those one account of that node
// registered (the "by alice" of a card). The listings are what this node
// holds of the publisher; the page says so.
func (p *Pages) PagePublisher(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	publisher := chi.URLParam(r, "peer")
	if _, err := peer.Decode(publisher); err != nil {
		p.RenderError(w, r, &httpkit.Error{Status: http.StatusNotFound, Code: string(agent.CodeNotFound),
			Message: "No publisher has that id: a publisher's page is /publishers/<its peer id>, linked from the \"by\" of an agent."})
		return
	}
	owner := r.URL.Query().Get("owner")
	if len(owner) > agent.MaxOwnerLen {
		p.RenderError(w, r, &httpkit.Error{Status: http.StatusBadRequest, Code: string(agent.CodeInvalidInput),
			Message: "That owner name is longer than any account's (" + strconv.Itoa(agent.MaxOwnerLen) + " characters at most)."})
		return
	}
	q := store.SearchQuery{Publishers: []string{publisher}, Owner: owner, Sort: store.SortNewest,
		Limit: publisherPageSize, Cursor: r.URL.Query().Get("cursor")}
	res := web.ResultsView{Filtered: true, Count: -1}
	status := http.StatusOK
	page, err := p.Discover.Search(ctx, q)
	switch {
	case errors.Is(err, store.ErrBadCursor):
		res.Error, status = "The page link is no longer valid; open the publisher's page again.", http.StatusBadRequest
	case err != nil:
		p.RenderError(w, r, err)
		return
	default:
		res.Agents = p.cards(ctx, page.Listings)
		if page.NextCursor != "" {
			res.NextHref = web.PublisherHref(publisher, owner) + cursorSep(owner) + "cursor=" + url.QueryEscape(page.NextCursor)
		}
	}
	if hxTarget(r) == "pager" {
		p.render(w, r, http.StatusOK, web.MoreResults(res))
		return
	}
	node := hostViewOf(p.labelsOf(ctx, []string{publisher})[publisher])
	if node.PeerID == "" {
		node = hostViewOf(store.NodeLabel{PeerID: publisher, Short: store.ShortPeerID(publisher), Self: publisher == p.Node.PeerID()})
	}
	v := web.PublisherView{
		PeerID:   publisher,
		Owner:    owner,
		Node:     node,
		Verified: p.verifiedDomains(publisher),
		Results:  res,
	}
	if owner != "" {
		v.AllHref = web.PublisherHref(publisher, "")
	}
	v.Page = p.page(r, p.viewer(r), v.Title(), "agents")
	p.render(w, r, status, web.PublisherPage(v))
}

// cursorSep joins the cursor to a publisher link, which has a query when
// it names an owner.
func cursorSep(owner string) string {
	if owner != "" {
		return "&"
	}
	return "?"
}
