package httpkit

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/store"
)

// SessionStore keeps sessions; the store engines implement it, so sessions
// live in the same database as everything else (Postgres or SQLite).
type SessionStore interface {
	SessionFind(ctx context.Context, token string) ([]byte, bool, error)
	SessionCommit(ctx context.Context, token string, b []byte, expiry time.Time) error
	SessionDelete(ctx context.Context, token string) error
}

// sessionStore adapts a SessionStore to scs.CtxStore.
type sessionStore struct{ st SessionStore }

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
	sessStamp   = "password_stamp"
	sessAnonKey = "anon_chat_key"
	sessFlash   = "flash"
)

// Sessions are the portal's cookie sessions: who is logged in, an
// anonymous visitor's chat key, a one-shot flash message. RenderError
// answers a request whose session cannot be loaded or saved (the store is
// down): set it before serving.
type Sessions struct {
	*scs.SessionManager
	RenderError func(w http.ResponseWriter, r *http.Request, err error)
	// Stamp, when set, is the current PasswordStamp of an account ("":
	// the account is gone). LogIn keeps it in the session, and a session
	// whose stamp is no longer its account's is signed out when it is
	// loaded: changing the password, or deleting the account, ends every
	// other session of it.
	Stamp func(ctx context.Context, userID int64) (string, error)
}

// NewSessions keeps sessions in st; secure marks the cookie Secure.
func NewSessions(st SessionStore, secure bool) *Sessions {
	return &Sessions{SessionManager: newSessionManager(st, secure)}
}

func newSessionManager(st SessionStore, secure bool) *scs.SessionManager {
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

// Middleware is scs's LoadAndSave, except when the store fails: a session
// that cannot be loaded, or saved before the response goes out, gets the
// error page (503 when the store is down) in place of scs's bare-text 500
// or the handler's response. An error response does not save the session,
// so a stalled store is not asked twice.
func (s *Sessions) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Cookie")
		var token string
		if c, err := r.Cookie(s.Cookie.Name); err == nil {
			token = c.Value
		}
		ctx, err := s.Load(r.Context(), token)
		if err != nil {
			s.renderSessionError(w, r, fmt.Errorf("load session: %w", err))
			return
		}
		if err := s.checkStamp(ctx); err != nil {
			s.renderSessionError(w, r, fmt.Errorf("load session user: %w", err))
			return
		}
		ctx = context.WithValue(ctx, sessionLoadedKey{}, true)
		sw := &sessionWriter{ResponseWriter: w, s: s, r: r.WithContext(ctx), before: w.Header().Clone()}
		next.ServeHTTP(sw, sw.r)
		sw.save(http.StatusOK)
	})
}

// renderSessionError renders err on a fresh, empty session (no store call)
// that is never saved.
func (s *Sessions) renderSessionError(w http.ResponseWriter, r *http.Request, err error) {
	ctx, _ := s.Load(r.Context(), "")
	s.RenderError(w, r.WithContext(context.WithValue(ctx, sessionLoadedKey{}, true)), err)
}

type sessionLoadedKey struct{}

// HasSession reports whether the request went through Middleware, so code
// shared with routes outside it (the error pages) knows whether it may
// touch the session.
func HasSession(ctx context.Context) bool {
	ok, _ := ctx.Value(sessionLoadedKey{}).(bool)
	return ok
}

// sessionWriter saves the session just before the response starts, like
// scs's, and if that fails sends the error page instead of the response.
type sessionWriter struct {
	http.ResponseWriter
	s      *Sessions
	r      *http.Request
	before http.Header // the headers before the handler ran
	saved  bool
	failed bool // the response is replaced by the error page
}

// save commits the session once; status is the response's (5xx: skipped).
func (sw *sessionWriter) save(status int) {
	if sw.saved {
		return
	}
	sw.saved = true
	if status >= 500 {
		return
	}
	ctx := sw.r.Context()
	switch sw.s.Status(ctx) {
	case scs.Modified:
		token, expiry, err := sw.s.Commit(ctx)
		if err != nil && errors.Is(err, store.ErrStorageFull) && (sw.r.Method == http.MethodGet || sw.r.Method == http.MethodHead) {
			// A read on a full disk is served: what a GET saves is the
			// session's idle expiry (or a new anonymous key), which waits
			// for a request with room. A form still gets the 507 page.
			return
		}
		if err != nil {
			sw.failed = true
			h := sw.Header() // drop what the handler set (Location, ...)
			clear(h)
			maps.Copy(h, sw.before)
			sw.s.renderSessionError(sw.ResponseWriter, sw.r, fmt.Errorf("save session: %w", err))
			return
		}
		sw.s.WriteSessionCookie(ctx, sw.ResponseWriter, token, expiry)
	case scs.Destroyed:
		sw.s.WriteSessionCookie(ctx, sw.ResponseWriter, "", time.Time{})
	}
}

func (sw *sessionWriter) WriteHeader(code int) {
	sw.save(code)
	if !sw.failed {
		sw.ResponseWriter.WriteHeader(code)
	}
}

func (sw *sessionWriter) Write(b []byte) (int, error) {
	sw.save(http.StatusOK)
	if sw.failed {
		return len(b), nil
	}
	return sw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (sw *sessionWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

// UserID is the logged-in account of the request's session, or 0.
func (s *Sessions) UserID(ctx context.Context) int64 { return s.GetInt64(ctx, sessUserID) }

// LogIn renews the session token (no fixation) and binds the user to it.
func (s *Sessions) LogIn(ctx context.Context, userID int64) error {
	if err := s.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session: %w", err)
	}
	s.Put(ctx, sessUserID, userID)
	if s.Stamp != nil {
		stamp, err := s.Stamp(ctx, userID)
		if err != nil {
			return fmt.Errorf("session stamp: %w", err)
		}
		s.Put(ctx, sessStamp, stamp)
	}
	return nil
}

// checkStamp signs the session out when its account's password changed
// or the account is gone (Stamp).
func (s *Sessions) checkStamp(ctx context.Context) error {
	id := s.GetInt64(ctx, sessUserID)
	if id == 0 || s.Stamp == nil {
		return nil
	}
	stamp, err := s.Stamp(ctx, id)
	if err != nil {
		return err
	}
	if stamp == "" || stamp != s.GetString(ctx, sessStamp) {
		s.Remove(ctx, sessUserID)
		s.Remove(ctx, sessStamp)
	}
	return nil
}

// SignedIn is the account signed in on the session whose cookie r
// carries, or 0, for a surface outside Middleware (A2A): the session is
// loaded read-only (never saved, so never renewed) and its password stamp
// checked, as Middleware does.
func (s *Sessions) SignedIn(r *http.Request) (int64, error) {
	c, err := r.Cookie(s.Cookie.Name)
	if err != nil || c.Value == "" {
		return 0, nil
	}
	ctx, err := s.Load(r.Context(), c.Value)
	if err != nil {
		return 0, fmt.Errorf("load session: %w", err)
	}
	if err := s.checkStamp(ctx); err != nil {
		return 0, fmt.Errorf("load session user: %w", err)
	}
	return s.GetInt64(ctx, sessUserID), nil
}

// LogOut ends the session.
func (s *Sessions) LogOut(ctx context.Context) error {
	if err := s.Destroy(ctx); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	return nil
}

// Flash keeps a one-shot message for the next page.
func (s *Sessions) Flash(ctx context.Context, msg string) { s.Put(ctx, sessFlash, msg) }

// PopFlash takes the one-shot message, if the request has a session.
func (s *Sessions) PopFlash(ctx context.Context) string {
	if !HasSession(ctx) {
		return ""
	}
	return s.PopString(ctx, sessFlash)
}

// ChatOwner is whose conversations a browser's are: the account if logged
// in, otherwise the anonymous key bound to the session cookie.
func (s *Sessions) ChatOwner(ctx context.Context) (chat.Owner, bool) {
	if id := s.GetInt64(ctx, sessUserID); id != 0 {
		return chat.UserOwner(id), true
	}
	if k := s.GetString(ctx, sessAnonKey); k != "" {
		return chat.AnonOwner(k), true
	}
	return "", false
}

// EnsureAnonKey gives an anonymous visitor a conversation key in their
// session, so their chats survive reloads (called by the chat page).
func (s *Sessions) EnsureAnonKey(ctx context.Context) error {
	if s.GetInt64(ctx, sessUserID) != 0 || s.GetString(ctx, sessAnonKey) != "" {
		return nil
	}
	k, err := chat.NewAnonKey()
	if err != nil {
		return err
	}
	s.Put(ctx, sessAnonKey, k)
	return nil
}
