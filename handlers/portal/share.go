package portal

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/static"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
	"github.com/agentsite/agentsite/web/markdown"
)

// SubmitShareConversation is POST /chat/{id}/conversations/{cid}/share:
// the owner makes a read-only link to a conversation (in place of an
// earlier one). The page answers the POST itself, because the link is
// shown this once: only its hash is kept.
func (p *Pages) SubmitShareConversation(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	agentID, convID := chi.URLParam(r, "id"), chi.URLParam(r, "cid")
	owner, _ := p.Sessions.ChatOwner(ctx)
	token, err := p.Chat.Share(ctx, owner, agentID, convID)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.showChat(w, r, http.StatusOK, convID, chatDraft{ShareToken: token})
}

// SubmitUnshareConversation is POST
// /chat/{id}/conversations/{cid}/unshare: the owner revokes the
// conversation's share link; the link answers 404 from then on.
func (p *Pages) SubmitUnshareConversation(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	agentID, convID := chi.URLParam(r, "id"), chi.URLParam(r, "cid")
	owner, _ := p.Sessions.ChatOwner(ctx)
	if err := p.Chat.Unshare(ctx, owner, agentID, convID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.Sessions.Flash(ctx, "This conversation is no longer shared: its link does not open it any more.")
	redirect(w, r, web.ChatHref(agentID, convID))
}

// PageShare is GET /share/{token}: a shared conversation, for anyone with
// the link, read-only and kept out of search engines. Nothing of the
// owner's other conversations is shown; a revoked or unknown link is a
// 404 that says so.
func (p *Pages) PageShare(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	w.Header().Set("X-Robots-Tag", "noindex, nofollow")
	c, err := p.Chat.Shared(ctx, chi.URLParam(r, "token"))
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	ms, err := p.Conversations.ListMessages(ctx, c.ID, chatPageMessages+1)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := web.ShareView{Title: chat.TitleText(c.Title), StyleURL: static.Path("chat.css")}
	if v.Title == "" {
		v.Title = "A shared conversation"
	}
	if len(ms) > chatPageMessages {
		ms, v.Truncated = ms[len(ms)-chatPageMessages:], true
	}
	if l, err := p.Catalog.GetAgent(ctx, c.AgentID); err == nil {
		v.AgentName = l.Record.DisplayName
	} else if !errors.Is(err, store.ErrNotFound) {
		p.RenderError(w, r, err)
		return
	}
	v.Messages = make([]web.ChatMessage, 0, len(ms))
	for _, m := range ms {
		cm := web.ChatMessage{ID: m.ID, Role: m.Role, Text: m.Text, CreatedAt: m.CreatedAt}
		switch m.Role {
		case agent.RoleStep:
			cm.Text, cm.Step = "", storedStep(m.Text)
		case agent.RoleAgent:
			cm.HTML = markdown.Render(m.Text)
		case agent.RoleError:
			if m.Text == chat.ErrStopped.Message {
				cm.Label = web.StoppedLabel
			}
		}
		v.Messages = append(v.Messages, cm)
	}
	v.Page = p.page(r, p.viewer(r), v.Title, "chat")
	v.Page.NoIndex = true
	p.render(w, r, http.StatusOK, web.SharePage(v))
}
