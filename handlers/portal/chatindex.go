package portal

import (
	"net/http"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// chatIndexAgents is how many agents /chat offers to start a conversation
// with.
const chatIndexAgents = 6

// PageChatIndex is GET /chat, AgentChat's front: the visitor's recent
// conversations (signed in: the account's; anonymous: this browser
// session's) and a few agents to start one with. It creates no session.
func (p *Pages) PageChatIndex(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := web.ChatIndexView{}
	if owner, ok := p.Sessions.ChatOwner(ctx); ok && owner != "" {
		cs, err := p.chatSideList(ctx, owner, store.Listing{}, "")
		if err != nil {
			p.RenderError(w, r, err)
			return
		}
		v.Conversations = cs
	}
	recent, err := p.Catalog.RecentAgents(ctx, chatIndexAgents)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v.Agents = p.cards(r.Context(), recent)
	v.Page = p.page(r, p.viewer(r), "AgentChat", "chat")
	p.render(w, r, http.StatusOK, web.ChatIndexPage(v))
}
