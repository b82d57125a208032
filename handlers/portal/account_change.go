package portal

import (
	"errors"
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
// sessions of the account are signed out by it (httpkit.Sessions.Stamp);
// this one logs in again with the new password's stamp.
func (p *Pages) SubmitChangePassword(w http.ResponseWriter, r *http.Request) {
	if !p.parseForm(w, r) {
		return
	}
	ctx := r.Context()
	u := userFrom(ctx)
	f := r.PostForm
	err := p.Accounts.ChangePassword(ctx, p.Users, u.ID, f.Get("current_password"), f.Get("password"), f.Get("password_confirm"))
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
	p.startSession(w, r, u.ID, "Password changed. You are signed out everywhere else.", "/account")
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
	if err := p.Users.DeleteUser(ctx, u.ID, string(chat.UserOwner(u.ID))); err != nil {
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
		page, err := p.Catalog.SearchAgents(ctx, store.SearchQuery{
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
