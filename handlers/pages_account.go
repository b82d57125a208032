package handlers

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// maxTokenName bounds a token's label.
const maxTokenName = 64

func (s *Server) pageAccount(w http.ResponseWriter, r *http.Request) {
	s.renderAccount(w, r, http.StatusOK, func(*web.AccountView) {})
}

// renderAccount renders the account page of the logged-in user; edit
// adjusts the view (a new token, a form error) before rendering.
func (s *Server) renderAccount(w http.ResponseWriter, r *http.Request, status int, edit func(*web.AccountView)) {
	ctx := r.Context()
	u := userFrom(ctx)
	page, err := s.Store.SearchAgents(ctx, store.SearchQuery{
		Owner:    u.Handle,
		Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline},
		Limit:    store.MaxLimit,
	})
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	tokens, err := s.Store.ListAPITokens(ctx, u.ID)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	v := web.AccountView{
		Page:       s.page(r, u, "Account", "account"),
		Handle:     u.Handle,
		Agents:     s.cards(page.Listings),
		MoreAgents: page.NextCursor != "",
		Errors:     map[string]string{},
	}
	for _, t := range tokens {
		v.Tokens = append(v.Tokens, web.TokenRow{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt})
	}
	edit(&v)
	s.render(w, r, status, web.AccountPage(v))
}

func validTokenName(name string) string {
	switch {
	case name == "":
		return "give the token a name, e.g. the machine that will use it"
	case len(name) > maxTokenName:
		return "at most " + strconv.Itoa(maxTokenName) + " bytes"
	case !utf8.ValidString(name) || strings.ContainsFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }):
		return "must be plain text on one line"
	}
	return ""
}

// submitCreateToken creates a personal API token and shows it in this
// response only (the page is not cacheable); the store keeps its hash.
func (s *Server) submitCreateToken(w http.ResponseWriter, r *http.Request) {
	if !s.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if msg := validTokenName(name); msg != "" {
		s.renderAccount(w, r, http.StatusUnprocessableEntity, func(v *web.AccountView) {
			v.TokenName = name
			v.Errors["token_name"] = msg
		})
		return
	}
	token, hash, err := httpkit.NewAPIToken()
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	if _, err := s.Store.CreateAPIToken(r.Context(), u.ID, name, hash); err != nil {
		s.renderError(w, r, err)
		return
	}
	s.renderAccount(w, r, http.StatusOK, func(v *web.AccountView) {
		v.NewToken = token
		v.NewTokenName = name
	})
}

func (s *Server) submitDeleteToken(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	id, err := strconv.ParseInt(chi.URLParam(r, "tokenID"), 10, 64)
	if err != nil || id <= 0 {
		s.renderError(w, r, httpkit.Errorf(http.StatusNotFound, "not_found", "No such token."))
		return
	}
	err = s.Store.DeleteAPIToken(r.Context(), u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		err = httpkit.Errorf(http.StatusNotFound, "not_found", "No such token.")
	}
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	s.flash(r, "Token deleted. Programs using it can no longer sign in.")
	redirect(w, r, "/account")
}
