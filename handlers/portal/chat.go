package portal

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

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
	// ShareToken is a share link just made, shown this once.
	ShareToken string
}

// PageChat is GET /chat/{id}: AgentChat with one agent. Anonymous visitors
// get a conversation key in their session here, which is what lets the
// WebSocket (which only reads the session) know whose conversations they
// are.
func (p *Pages) PageChat(w http.ResponseWriter, r *http.Request) {
	// ?prompt= fills the composer: the starter prompts' links without
	// JavaScript.
	draft := chatDraft{Text: r.URL.Query().Get("prompt")}
	if len(draft.Text) > chat.MaxMessageBytes || !utf8.ValidString(draft.Text) {
		draft.Text = ""
	}
	p.showChat(w, r, http.StatusOK, r.URL.Query().Get("c"), draft)
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
	// redo=retry sends the conversation's last message again, in place of
	// its failed or stopped exchange (the Try again button without
	// JavaScript).
	retry := r.PostForm.Get("redo") == "retry"
	if err := p.Sessions.EnsureAnonKey(ctx); err != nil {
		p.RenderError(w, r, err)
		return
	}
	owner, _ := p.Sessions.ChatOwner(ctx)
	now := p.now()
	address := httpkit.ClientKey(r)
	keys := []string{string(owner)}
	addressAllows := true
	if p.Anon != nil {
		addressAllows = p.Anon.Allow(address, now)
	} else {
		keys = append(keys, "ip:"+address)
	}
	if !p.ChatLimits.Allow(string(owner), now) || !addressAllows || (p.Anon == nil && !p.ChatLimits.Allow("ip:"+address, now)) {
		w.Header().Set("Retry-After", "10")
		p.showChat(w, r, http.StatusTooManyRequests, convID, chatDraft{Text: text, Error: "You are sending messages too fast; wait a moment."})
		return
	}
	req := chat.Request{AgentID: agentID, ConversationID: convID, Text: text,
		Quota: p.ChatLimits.Quota(p.now, keys...)}
	if retry {
		req.Text, req.ReplaceLast = "", true
	}
	if _, pending := p.Live.InFlight(owner, convID); pending {
		p.showChat(w, r, http.StatusConflict, convID, chatDraft{Text: text, Error: chat.ErrReplyPending.Message})
		return
	}
	// The form's turn counts against the visitor's replies at once, with
	// its WebSocket ones.
	release, err := p.Live.Hold(owner)
	if err != nil {
		w.Header().Set("Retry-After", "10")
		p.showChat(w, r, http.StatusTooManyRequests, convID, chatDraft{Text: text, Error: chat.ErrTooManyReplies.Message})
		return
	}
	defer release()
	if p.Anon != nil && owner.Anonymous() {
		releaseAddress, err := p.Anon.Hold(address)
		if err != nil {
			w.Header().Set("Retry-After", "10")
			p.showChat(w, r, http.StatusTooManyRequests, convID, chatDraft{Text: text, Error: httpkit.ErrAddressBusy.Message})
			return
		}
		defer releaseAddress()
	}
	res, err := p.Chat.Turn(ctx, owner, req, func(string) error { return nil })
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
	agentID := chi.URLParam(r, "id")
	l, err := p.Chat.Agent(ctx, agentID)
	readOnly := false
	if errors.Is(err, chat.ErrUnknownAgent) && convID != "" {
		// The agent was deleted: its conversations stay readable.
		l, err, readOnly = deletedAgent(agentID), nil, true
	}
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
		ReadOnly: readOnly,
		Agent: web.ChatAgent{
			ID:          rec.ID,
			Name:        rec.Name,
			DisplayName: rec.DisplayName,
			Status:      l.Status,
			Local:       l.Local,
			HostPeerID:  l.HostPeerID,
			HostName:    p.listingHost(ctx, l).Label(),
		},
		Draft:     draft.Text,
		Error:     draft.Error,
		ScriptURL: static.Path("chat.js"),
		StyleURL:  static.Path("chat.css"),
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
		v.ConversationID, v.Title = c.ID, c.Title
		v.Messages = make([]web.ChatMessage, 0, len(ms))
		for _, m := range ms {
			cm := web.ChatMessage{ID: m.ID, Role: m.Role, Text: m.Text, CreatedAt: m.CreatedAt}
			switch m.Role {
			case agent.RoleStep:
				cm.Text, cm.Step = "", storedStep(m.Text)
			case agent.RoleAgent:
				cm.HTML, cm.Finished = markdown.Render(m.Text), true
			case agent.RoleError:
				if m.Text == chat.ErrStopped.Message {
					cm.Label = web.StoppedLabel
				}
			}
			v.Messages = append(v.Messages, cm)
		}
		if n := len(v.Messages); n > 0 && v.Messages[n-1].Role == agent.RoleAgent && !readOnly {
			if a, ok := p.Chat.WaitingApproval(ctx, owner, rec.ID, c.ID); ok {
				if b, err := json.Marshal(a); err == nil {
					v.Messages[n-1].Approval = string(b)
				}
			}
		}
		if text, ok := p.Live.InFlight(owner, c.ID); ok {
			v.Live, v.LiveText = true, text
		} else if n := len(v.Messages); n > 0 && v.Messages[n-1].Role == agent.RoleError && !readOnly {
			// The last exchange failed or was stopped: offer to send it
			// again.
			v.Messages[n-1].Retry = true
		} else if n > 0 && v.Messages[n-1].Role == agent.RoleAgent && !readOnly {
			// The last reply may be answered anew.
			v.Messages[n-1].Regenerate = true
		}
	}
	if len(v.Messages) == 0 && !readOnly {
		v.Starters = starters(rec)
	}
	if v.Conversations, err = p.chatSideList(ctx, owner, l, v.ConversationID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	if v.ConversationID != "" {
		if v.Shared, err = p.Chat.IsShared(ctx, v.ConversationID); err != nil {
			p.RenderError(w, r, err)
			return
		}
	}
	if v.ConversationID != "" && draft.ShareToken != "" {
		v.ShareURL = p.base(r) + web.ShareHref(draft.ShareToken)
	}
	v.Page = p.page(r, p.viewer(r), "Chat with "+rec.DisplayName, "chat")
	p.render(w, r, status, web.ChatPage(v))
}

// deletedAgent stands for an agent no longer known here, whose
// conversations stay readable.
func deletedAgent(id string) store.Listing {
	return store.Listing{Record: agent.Record{ID: id, Name: "deleted", DisplayName: "Deleted agent"}, Status: store.StatusOffline, Local: true}
}

// maxStarters bounds the starter prompts of an empty conversation.
const maxStarters = 4

// starters are the agent's skill examples, offered as first messages.
func starters(rec agent.Record) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range rec.Skills {
		for _, ex := range s.Examples {
			ex = strings.TrimSpace(ex)
			if ex == "" || seen[ex] || len(ex) > chat.MaxMessageBytes {
				continue
			}
			seen[ex] = true
			out = append(out, ex)
			if len(out) == maxStarters {
				return out
			}
		}
	}
	return out
}

// SubmitRenameConversation is POST /chat/{id}/conversations/{cid}/rename:
// the owner gives a conversation a title of their own.
func (p *Pages) SubmitRenameConversation(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	agentID, convID := chi.URLParam(r, "id"), chi.URLParam(r, "cid")
	owner, _ := p.Sessions.ChatOwner(ctx)
	if _, err := p.Chat.Rename(ctx, owner, agentID, convID, r.PostForm.Get("title")); err != nil {
		if errors.Is(err, chat.ErrBadTitle) {
			p.Sessions.Flash(ctx, chat.ErrBadTitle.Message)
			redirect(w, r, web.ChatHref(agentID, convID))
			return
		}
		p.RenderError(w, r, err)
		return
	}
	p.Sessions.Flash(ctx, "Conversation renamed.")
	redirect(w, r, web.ChatHref(agentID, convID))
}

// SubmitDeleteConversation is POST /chat/{id}/conversations/{cid}/delete:
// the owner deletes a conversation and its messages (a reply on its way
// there is stopped first).
func (p *Pages) SubmitDeleteConversation(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	agentID, convID := chi.URLParam(r, "id"), chi.URLParam(r, "cid")
	owner, _ := p.Sessions.ChatOwner(ctx)
	if _, err := p.Chat.Conversation(ctx, owner, agentID, convID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.Live.Stop(owner, convID)
	if err := p.Chat.Delete(ctx, owner, agentID, convID); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.Sessions.Flash(ctx, "Conversation deleted.")
	if _, err := p.Chat.Agent(ctx, agentID); err != nil {
		redirect(w, r, "/agents") // the agent is gone too
		return
	}
	redirect(w, r, web.ChatHref(agentID, ""))
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
	return p.labelConversations(ctx, cs, current, currentID)
}

// labelConversations labels each of cs with its agent's name (from the
// cache only); current is the page's agent, currentID the open
// conversation.
func (p *Pages) labelConversations(ctx context.Context, cs []store.Conversation, current store.Listing, currentID string) ([]web.ChatConversation, error) {
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
			Title:     chat.TitleText(c.Title),
			UpdatedAt: c.UpdatedAt,
			Ago:       web.Ago(c.UpdatedAt, now),
			Current:   c.ID == currentID,
		})
	}
	return out, nil
}
