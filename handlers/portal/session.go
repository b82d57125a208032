package portal

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentsite/agentsite/store"
)

// currentUser returns the logged-in user of a portal request, or nil (a
// store failure is logged and treated as anonymous, which is safe for
// pages that merely show who is logged in; RequireLogin fails instead).
func (p *Pages) currentUser(r *http.Request) *store.User {
	u, err := p.lookupUser(r)
	if err != nil {
		p.Logger.WarnContext(r.Context(), "loading the session user failed", "err", err)
		return nil
	}
	return u
}

// lookupUser returns the session's user, nil if anonymous (or the account
// is gone), or an error if the store failed.
func (p *Pages) lookupUser(r *http.Request) (*store.User, error) {
	id := p.Sessions.UserID(r.Context())
	if id == 0 {
		return nil, nil
	}
	u, err := p.Users.GetUserByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load session user: %w", err)
	}
	return &u, nil
}

// RequireLogin sends anonymous visitors to /login, remembering where they
// were going.
func (p *Pages) RequireLogin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := p.lookupUser(r)
		if err != nil {
			p.RenderError(w, r, err)
			return
		}
		if u == nil {
			target := "/login?next=" + url.QueryEscape(r.URL.RequestURI())
			if r.Header.Get("HX-Request") == "true" {
				w.Header().Set("HX-Redirect", target)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, target, http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(withUser(r.Context(), u)))
	})
}

type userKey struct{}

func withUser(ctx context.Context, u *store.User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// userFrom returns the user put in the context by RequireLogin.
func userFrom(ctx context.Context) *store.User {
	u, _ := ctx.Value(userKey{}).(*store.User)
	return u
}
