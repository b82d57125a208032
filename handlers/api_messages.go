package handlers

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
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
	owner := "api:anonymous"
	if r.Header.Get("Authorization") != "" {
		p, err := s.apiPrincipal(r)
		if err != nil {
			s.renderError(w, r, err)
			return
		}
		owner = "operator"
		if p.User != nil {
			owner = "user:" + strconv.FormatInt(p.User.ID, 10)
		}
	}
	if !s.chatLimits.allow("ip:"+clientKey(r), s.now()) {
		s.tooManyRequests(w, r)
		return
	}
	var in messageIn
	if err := decodeJSON(r, &in); err != nil {
		s.renderError(w, r, err)
		return
	}
	res, err := s.Turn(r.Context(), owner, TurnRequest{AgentID: chi.URLParam(r, "id"), ConversationID: in.ConversationID, Text: in.Text}, func(string) error { return nil })
	if err != nil {
		e := toError(err)
		if e.Fields == nil && res.Conversation.ID != "" {
			e = &Error{Status: e.Status, Code: e.Code, Message: e.Message, Fields: map[string]string{"conversation_id": res.Conversation.ID}, RetryAfter: e.RetryAfter}
		}
		s.renderError(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, messageOut{ConversationID: res.Conversation.ID, MessageID: res.Reply.ID, Reply: res.Reply.Text})
}
