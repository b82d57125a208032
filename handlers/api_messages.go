package handlers

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

type messageIn struct {
	Text           string `json:"text"`
	ConversationID string `json:"conversation_id,omitempty"`
}

type messageOut struct {
	ConversationID string `json:"conversation_id"`
	MessageID      int64  `json:"message_id"`
	Reply          string `json:"reply"`
}

// apiSendMessage is POST /api/v1/agents/{id}/messages: one synchronous turn
// for scripts. With a bearer token the conversation belongs to its account;
// without one the conversation id itself is the capability to continue it.
func (s *Server) apiSendMessage(w http.ResponseWriter, r *http.Request) {
	owner := chat.APIAnonymous
	if r.Header.Get("Authorization") != "" {
		p, err := s.Accounts.Bearer(r)
		if err != nil {
			s.renderError(w, r, err)
			return
		}
		owner = p.Owner()
	}
	if !s.chatLimits.Allow("ip:"+httpkit.ClientKey(r), s.now()) {
		s.tooManyRequests(w, r)
		return
	}
	var in messageIn
	if err := httpkit.DecodeJSON(r, &in); err != nil {
		s.renderError(w, r, err)
		return
	}
	res, err := s.Chat.Turn(r.Context(), owner, chat.Request{AgentID: chi.URLParam(r, "id"), ConversationID: in.ConversationID, Text: in.Text}, func(string) error { return nil })
	if err != nil {
		e := httpkit.Classify(err)
		if e.Fields == nil && res.Conversation.ID != "" {
			e = &httpkit.Error{Status: e.Status, Code: e.Code, Message: e.Message, Fields: map[string]string{"conversation_id": res.Conversation.ID}, RetryAfter: e.RetryAfter}
		}
		s.renderError(w, r, e)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, messageOut{ConversationID: res.Conversation.ID, MessageID: res.Reply.ID, Reply: res.Reply.Text})
}
