package portal

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// maxTokenName bounds a token's label.
const maxTokenName = 64

// errNoToken answers for a token id that is not the user's, or not a
// number: the same 404 either way.
var errNoToken = httpkit.Errorf(http.StatusNotFound, string(agent.CodeNotFound), "No such token.")

// Session keys of a token just created: kept for the one GET after the
// create POST (never in a URL), then popped, so it is shown exactly once.
const (
	sessNewToken     = "new_api_token"
	sessNewTokenName = "new_api_token_name"
)

// PageAccount is the logged-in user's agents and API tokens (also served
// at /account/tokens). A token created by the POST before is shown on
// this one visit.
func (p *Pages) PageAccount(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	token := p.Sessions.PopString(ctx, sessNewToken)
	name := p.Sessions.PopString(ctx, sessNewTokenName)
	p.renderAccount(w, r, http.StatusOK, func(v *web.AccountView) {
		v.NewToken = token
		v.NewTokenName = name
	})
}

// renderAccount renders the account page of the logged-in user; edit
// adjusts the view (a new token, a form error) before rendering.
func (p *Pages) renderAccount(w http.ResponseWriter, r *http.Request, status int, edit func(*web.AccountView)) {
	ctx := r.Context()
	u := userFrom(ctx)
	page, err := p.Discover.Search(ctx, store.SearchQuery{
		Owner:    u.Handle,
		Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline},
		Limit:    store.MaxLimit,
	})
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	tokens, err := p.Users.ListAPITokens(ctx, u.ID)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	v := web.AccountView{
		Page:       p.page(r, u, "Account", "account"),
		Handle:     u.Handle,
		Agents:     p.cards(r.Context(), page.Listings),
		MoreAgents: page.NextCursor != "",
		Errors:     map[string]string{},
	}
	v.Health = p.accountHealth(v.Agents)
	if p.Memories != nil {
		v.ShowMemories = true
		if v.Memories, err = p.accountMemories(ctx, u.ID); err != nil {
			p.RenderError(w, r, err)
			return
		}
	}
	for _, t := range tokens {
		v.Tokens = append(v.Tokens, web.TokenRow{ID: t.ID, Name: t.Name, CreatedAt: t.CreatedAt, LastUsedAt: t.LastUsedAt})
	}
	edit(&v)
	p.render(w, r, status, web.AccountPage(v))
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

// SubmitCreateToken creates a personal API token and redirects to
// /account/tokens, which shows it once (the page is not cacheable); a
// reload of that page does not create another. The store keeps its hash.
func (p *Pages) SubmitCreateToken(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	u := userFrom(r.Context())
	name := strings.TrimSpace(r.PostForm.Get("name"))
	if msg := validTokenName(name); msg != "" {
		p.renderAccount(w, r, http.StatusUnprocessableEntity, func(v *web.AccountView) {
			v.TokenName = name
			v.Errors["token_name"] = msg
		})
		return
	}
	token, hash, err := httpkit.NewAPIToken()
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	if _, err := p.Users.CreateAPIToken(r.Context(), u.ID, name, hash); err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.Sessions.Put(r.Context(), sessNewToken, token)
	p.Sessions.Put(r.Context(), sessNewTokenName, name)
	redirect(w, r, "/account/tokens")
}

// SubmitDeleteToken revokes one of the user's tokens; another user's
// token id is a 404, so ids cannot be probed.
func (p *Pages) SubmitDeleteToken(w http.ResponseWriter, r *http.Request) {
	p.deleteOwned(w, r, "tokenID", errNoToken, p.Users.DeleteAPIToken,
		"Token deleted. Programs using it can no longer sign in.", "/account")
}

// deleteOwned deletes the signed-in user's row whose id is the URL
// parameter param (del refuses another user's with store.ErrNotFound),
// then flashes done and goes to next; a bad or unknown id is notFound.
func (p *Pages) deleteOwned(w http.ResponseWriter, r *http.Request, param string, notFound error,
	del func(ctx context.Context, userID, id int64) error, done, next string) {
	u := userFrom(r.Context())
	id, err := strconv.ParseInt(chi.URLParam(r, param), 10, 64)
	if err != nil || id <= 0 {
		p.RenderError(w, r, notFound)
		return
	}
	err = del(r.Context(), u.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		err = notFound
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	p.flash(r, done)
	redirect(w, r, next)
}
