package portal

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// passwordFields are the password form's fields in page order: the first
// wrong one gets the focus.
var passwordFields = []string{"current_password", "password", "password_confirm"}

// SubmitChangePassword changes the signed-in user's password. The other
// sessions of the account are signed out by it (httpkit.Sessions.Stamp)
// and its API tokens revoked; this one logs in again with the new
// password's stamp and is sent to the API tokens to make new ones.
func (p *Pages) SubmitChangePassword(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	u := userFrom(ctx)
	if msg, ok := p.passwordAttempt(w, u.Handle); !ok {
		p.renderAccount(w, r, http.StatusTooManyRequests, func(v *web.AccountView) {
			v.Errors["password_form"] = msg
			v.Focus = "current_password"
		})
		return
	}
	f := r.PostForm
	revoked, err := p.Accounts.ChangePassword(ctx, p.Users, u.ID, f.Get("current_password"), f.Get("password"), f.Get("password_confirm"))
	if ve, ok := errors.AsType[*agent.ValidationError](err); ok {
		p.renderAccount(w, r, http.StatusUnprocessableEntity, func(v *web.AccountView) {
			for k, msg := range ve.Fields {
				v.Errors[k] = msg
			}
			// Both new-password fields come back empty: a mismatch
			// starts again at the first of them.
			if v.Focus = firstOf(passwordFields, ve.Fields); v.Focus == "password_confirm" {
				v.Focus = "password"
			}
		})
		return
	}
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	msg := "Password changed. You are signed out everywhere else."
	if revoked > 0 {
		tokens := fmt.Sprintf("your %d API tokens are", revoked)
		if revoked == 1 {
			tokens = "your API token is"
		}
		msg = "Password changed. You are signed out everywhere else, and " + tokens +
			" revoked: create new ones under API tokens for the programs that used them."
	}
	p.startSession(w, r, u.ID, msg, "/account#tokens")
}

// SubmitDeleteAccount deletes the signed-in user's account once they typed
// their handle and password: their agents on this node (each deletion
// announced to the network), API tokens and conversations; then every
// session of the account ends.
func (p *Pages) SubmitDeleteAccount(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	u := userFrom(ctx)
	typed := strings.TrimSpace(r.PostForm.Get("confirm_handle"))
	if msg, ok := p.passwordAttempt(w, u.Handle); !ok {
		p.renderAccount(w, r, http.StatusTooManyRequests, func(v *web.AccountView) {
			v.Errors["delete_password"] = msg
			v.ConfirmHandle = typed
			v.Focus = "delete_password"
		})
		return
	}
	errs := map[string]string{}
	if !strings.EqualFold(strings.TrimPrefix(typed, "@"), u.Handle) {
		errs["confirm_handle"] = "type your handle, " + u.Handle + ", to confirm"
	}
	ok, err := p.Accounts.CheckPassword(ctx, p.Users, u.ID, r.PostForm.Get("delete_password"))
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	if !ok {
		errs["delete_password"] = "is not your password"
	}
	if len(errs) > 0 {
		p.renderAccount(w, r, http.StatusUnprocessableEntity, func(v *web.AccountView) {
			for k, msg := range errs {
				v.Errors[k] = msg
			}
			v.ConfirmHandle = typed
			v.Focus = firstOf([]string{"confirm_handle", "delete_password"}, errs)
		})
		return
	}
	n, err := p.deleteAgentsOf(r, u)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	// The handle stays held for a while, so that whoever knew it does not
	// reach a newcomer under it.
	if err := p.Users.DeleteUser(ctx, u.ID, string(chat.UserOwner(u.ID)), p.now().Add(httpkit.HandleHold)); err != nil {
		p.RenderError(w, r, err)
		return
	}
	if err := p.Sessions.LogOut(ctx); err != nil {
		p.RenderError(w, r, err)
		return
	}
	msg := "Your account @" + u.Handle + " is deleted."
	if n > 0 {
		msg += " The deletion of its agents is being announced."
	}
	p.flash(r, msg)
	redirect(w, r, "/")
}

// deleteAgentsOf deletes the agents this node hosts for u, a page at a
// time, and returns how many.
func (p *Pages) deleteAgentsOf(r *http.Request, u *store.User) (int, error) {
	ctx := r.Context()
	actor := httpkit.Principal{User: u}.Actor()
	n := 0
	for range 1000 { // at most 100k agents; an account has far fewer
		page, err := p.Discover.Search(ctx, store.SearchQuery{
			Owner:    u.Handle,
			Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline},
			Limit:    store.MaxLimit,
		})
		if err != nil {
			return n, err
		}
		deleted := 0
		for _, l := range page.Listings {
			if !l.Local || l.Record.Tombstone || !actor.CanManage(l) {
				continue
			}
			if err := p.Registry.Delete(ctx, actor, l.Record.ID); err != nil {
				return n, err
			}
			deleted++
		}
		n += deleted
		if deleted == 0 {
			return n, nil
		}
	}
	return n, nil
}

// firstOf is the first of fields (in page order) that errs names.
func firstOf(fields []string, errs map[string]string) string {
	for _, f := range fields {
		if errs[f] != "" {
			return f
		}
	}
	return ""
}
