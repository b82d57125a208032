package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/apiwire"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// GetConversation is GET /api/v1/conversations/{id}?limit=: a conversation
// and its newest messages, steps included, for whoever may send in it (see
// owner). It is a read, not a chat turn: it spends no chat budget.
func (a *API) GetConversation(w http.ResponseWriter, r *http.Request) {
	owner, err := a.owner(r)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	limit, err := historyLimit(r.URL.Query().Get("limit"))
	if err != nil {
		a.Fail(w, r, httpkit.BadQuery(err))
		return
	}
	conv, ms, err := a.Chat.History(r.Context(), owner, chi.URLParam(r, "id"), limit)
	if err != nil {
		a.Fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, apiwire.FromConversation(conv, ms))
}

// historyLimit reads the limit parameter: absent is chat.DefaultHistory,
// and anything but 1..chat.MaxHistory is refused rather than guessed at.
func historyLimit(s string) (int, error) {
	if s == "" {
		return chat.DefaultHistory, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > chat.MaxHistory {
		return 0, &agent.ValidationError{Fields: map[string]string{"limit": fmt.Sprintf("must be a number from 1 to %d", chat.MaxHistory)}}
	}
	return n, nil
}
