package portal

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent/chat"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// chatIndexAgents is how many agents /chat offers to start a conversation
// with.
const chatIndexAgents = 6

// PageChatIndex is GET /chat, AgentChat's front: the visitor's recent
// conversations (signed in: the account's; anonymous: this browser
// session's), or with ?q= those of them whose title or messages hold q,
// and a few agents to start one with. It creates no session.
func (p *Pages) PageChatIndex(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	v := web.ChatIndexView{Query: strings.TrimSpace(r.URL.Query().Get("q"))}
	if len(v.Query) > store.MaxConversationQuery || !utf8.ValidString(v.Query) {
		v.Query, v.QueryError = "", fmt.Sprintf("Search for at most %d characters of a title or a message.", store.MaxConversationQuery)
	}
	if owner, ok := p.Sessions.ChatOwner(ctx); ok && owner != "" && v.QueryError == "" {
		var (
			cs  []web.ChatConversation
			err error
		)
		if v.Query != "" {
			cs, err = p.searchConversations(ctx, owner, v.Query)
		} else {
			cs, err = p.chatSideList(ctx, owner, store.Listing{}, "")
		}
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

// searchConversations is owner's conversations whose title or messages
// hold q, labelled as the side list is.
func (p *Pages) searchConversations(ctx context.Context, owner chat.Owner, q string) ([]web.ChatConversation, error) {
	cs, err := p.Conversations.SearchConversations(ctx, string(owner), q, chatSideConversations)
	if err != nil {
		return nil, err
	}
	return p.labelConversations(ctx, cs, store.Listing{}, "")
}
