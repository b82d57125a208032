package portal

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/static"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
	"github.com/agentsite/agentsite/web/markdown"
)

// AgentChat page limits.
const (
	chatSideConversations = 50  // entries in the side list
	chatPageMessages      = 200 // messages of the selected conversation shown
)

// chatDraft is what a refused no-JS send leaves in the composer.
type chatDraft struct {
	Text  string
	Error string
}

// PageChat is GET /chat/{id}: AgentChat with one agent. Anonymous visitors
// get a conversation key in their session here, which is what lets the
// WebSocket (which only reads the session) know whose conversations they
// are.
func (p *Pages) PageChat(w http.ResponseWriter, r *http.Request) {
	p.showChat(w, r, http.StatusOK, r.URL.Query().Get("c"), chatDraft{})
}

// SubmitChat is POST /chat/{id}, the composer without JavaScript: one
// synchronous turn, then back to the conversation (Post/Redirect/Get). A
// failed turn is stored in the conversation and shown there; a message
// refused before it was sent (empty, too long, too fast) comes back in the
// composer with the reason.
func (p *Pages) SubmitChat(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	agentID, convID, text := chi.URLParam(r, "id"), r.PostForm.Get("c"), r.PostForm.Get("text")
	if err := p.Sessions.EnsureAnonKey(ctx); err != nil {
		p.RenderError(w, r, err)
		return
	}
	owner, _ := p.Sessions.ChatOwner(ctx)
	now := p.now()
	if !p.ChatLimits.Allow(string(owner), now) || !p.ChatLimits.Allow("ip:"+httpkit.ClientKey(r), now) {
		w.Header().Set("Retry-After", "10")
		p.showChat(w, r, http.StatusTooManyRequests, convID, chatDraft{Text: text, Error: "You are sending messages too fast; wait a moment."})
		return
	}
	res, err := p.Chat.Turn(ctx, owner, chat.Request{AgentID: agentID, ConversationID: convID, Text: text}, func(string) error { return nil })
	if err == nil {
		redirect(w, r, web.ChatHref(agentID, res.Conversation.ID))
		return
	}
	e := httpkit.Classify(err)
	p.logIfServer(r, e, err)
	switch {
	case e.Status == httpkit.StatusClientClosed:
		return
	case res.Conversation.ID != "" && e.Code != string(agent.CodeInternal):
		// Turn stored the failure as an error message: it is in the history.
		redirect(w, r, web.ChatHref(agentID, res.Conversation.ID))
	case e.Code == string(agent.CodeUnknownAgent) || e.Code == string(agent.CodeUnknownConv) ||
		(e.Status >= 500 && e.Code != string(agent.CodeAgentOffline)):
		p.RenderError(w, r, e)
	default:
		p.showChat(w, r, e.Status, convID, chatDraft{Text: text, Error: e.Message})
	}
}

// showChat renders the chat page with conversation convID selected.
func (p *Pages) showChat(w http.ResponseWriter, r *http.Request, status int, convID string, draft chatDraft) {
	ctx := r.Context()
	l, err := p.Chat.Agent(ctx, chi.URLParam(r, "id"))
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	if err := p.Sessions.EnsureAnonKey(ctx); err != nil {
		p.RenderError(w, r, err)
		return
	}
	owner, _ := p.Sessions.ChatOwner(ctx)
	rec := l.Record
	v := web.ChatView{
		Agent: web.ChatAgent{
			ID:          rec.ID,
			Name:        rec.Name,
			DisplayName: rec.DisplayName,
			Status:      l.Status,
			Local:       l.Local,
			HostPeerID:  l.HostPeerID,
		},
		Draft:     draft.Text,
		Error:     draft.Error,
		ScriptURL: static.Path("chat.js"),
	}
	if convID != "" {
		c, err := p.Chat.Conversation(ctx, owner, rec.ID, convID)
		if err != nil {
			p.RenderError(w, r, err)
			return
		}
		ms, err := p.Conversations.ListMessages(ctx, c.ID, chatPageMessages+1)
		if err != nil {
			p.RenderError(w, r, err)
			return
		}
		if len(ms) > chatPageMessages {
			ms, v.Truncated = ms[len(ms)-chatPageMessages:], true
		}
		v.ConversationID = c.ID
		v.Messages = make([]web.ChatMessage, 0, len(ms))
		for _, m := range ms {
			cm := web.ChatMessage{ID: m.ID, Role: m.Role, Text: m.Text, CreatedAt: m.CreatedAt}
			switch m.Role {
			case agent.RoleStep:
				cm.Text, cm.Step = "", storedStep(m.Text)
			case agent.RoleAgent:
				cm.HTML = markdown.Render(m.Text)
			}
			v.Messages = append(v.Messages, cm)
		}
	}
	if v.Conversations, err = p.chatSideList(ctx, owner, l, v.ConversationID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	v.Page = p.page(r, p.viewer(r), "Chat with "+rec.DisplayName, "chat")
	p.render(w, r, status, web.ChatPage(v))
}

// storedStep reads a step message (agent.Step as JSON), or nil when it is
// not a finished step of a known tool: the page then shows a plain "step"
// line rather than whatever the text holds.
func storedStep(text string) *web.ChatStep {
	s, ok := agent.ParseStep(text)
	if !ok || !s.Done {
		return nil
	}
	if v, ok := web.NewChatStep(s); ok {
		return &v
	}
	return nil
}

// chatSideList is owner's conversations with any agent, each labelled
// with its agent's name (from the cache only: no network look-ups for a
// side list).
func (p *Pages) chatSideList(ctx context.Context, owner chat.Owner, current store.Listing, currentID string) ([]web.ChatConversation, error) {
	if owner == "" {
		return nil, nil
	}
	cs, err := p.Conversations.ListConversations(ctx, string(owner), chatSideConversations)
	if err != nil {
		return nil, err
	}
	names := map[string]string{current.Record.ID: current.Record.DisplayName}
	now := p.now()
	out := make([]web.ChatConversation, 0, len(cs))
	for _, c := range cs {
		name, ok := names[c.AgentID]
		if !ok {
			if l, err := p.Catalog.GetAgent(ctx, c.AgentID); err == nil {
				name = l.Record.DisplayName
			} else if !errors.Is(err, store.ErrNotFound) {
				return nil, err
			}
			names[c.AgentID] = name
		}
		out = append(out, web.ChatConversation{
			ID:        c.ID,
			AgentID:   c.AgentID,
			AgentName: name,
			Title:     c.Title,
			UpdatedAt: c.UpdatedAt,
			Ago:       web.Ago(c.UpdatedAt, now),
			Current:   c.ID == currentID,
		})
	}
	return out, nil
}
