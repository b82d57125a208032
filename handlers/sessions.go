package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/agentsite/agentsite/store"
)

// sessionStore adapts store.Store to scs.CtxStore, so sessions live in the
// same database as everything else (Postgres or SQLite).
type sessionStore struct{ st store.Store }

var _ scs.CtxStore = sessionStore{}

func (s sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	return s.st.SessionFind(ctx, token)
}

func (s sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	return s.st.SessionCommit(ctx, token, b, expiry)
}

func (s sessionStore) DeleteCtx(ctx context.Context, token string) error {
	return s.st.SessionDelete(ctx, token)
}

func (s sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s sessionStore) Delete(token string) error {
	return s.DeleteCtx(context.Background(), token)
}

// Session keys.
const (
	sessUserID  = "user_id"
	sessAnonKey = "anon_chat_key"
	sessFlash   = "flash"
)

func newSessionManager(st store.Store, secure bool) *scs.SessionManager {
	// scs.New also starts an in-memory store whose cleanup goroutine runs
	// for the life of the process (one per Server). Stopping it right away
	// races inside scs v2.9 (StopCleanup reads the channel startCleanup
	// writes), so it is left running; it wakes once a minute.
	sm := scs.New()
	sm.Store = sessionStore{st: st}
	sm.Lifetime = 30 * 24 * time.Hour
	sm.IdleTimeout = 7 * 24 * time.Hour
	sm.Cookie.Name = "agentsite_session"
	sm.Cookie.HttpOnly = true
	sm.Cookie.SameSite = http.SameSiteLaxMode
	sm.Cookie.Secure = secure
	sm.Cookie.Path = "/"
	return sm
}

type sessionLoadedKey struct{}

// loadSession is scs's LoadAndSave that also marks the request as having a
// session, so code shared with routes outside it (the error pages) knows
// whether it may touch the session.
func (s *Server) loadSession(next http.Handler) http.Handler {
	return s.sessions.LoadAndSave(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionLoadedKey{}, true)))
	}))
}

func hasSession(ctx context.Context) bool {
	ok, _ := ctx.Value(sessionLoadedKey{}).(bool)
	return ok
}
