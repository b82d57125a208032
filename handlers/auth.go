package handlers

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/httpkit"

	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Principal is who is making a request: a portal user, or the operator.
type Principal struct {
	User     *store.User // nil for the operator
	Operator bool
}

// Handle is the owner handle the principal registers agents under.
func (p Principal) Handle() string {
	if p.User != nil {
		return p.User.Handle
	}
	return ""
}

// Actor is who p is to the registry.
func (p Principal) Actor() registry.Actor {
	return registry.Actor{Owner: p.Handle(), Operator: p.Operator}
}

// Owner is whose conversations p's chat turns belong to.
func (p Principal) Owner() chat.Owner {
	if p.User != nil {
		return chat.UserOwner(p.User.ID)
	}
	return chat.OperatorOwner
}

// Password and handle rules.
const (
	minPasswordLen = 8
	maxPasswordLen = 72 // bcrypt's limit, in bytes
)

func validateSignup(handle, password string) error {
	ve := &agent.ValidationError{Fields: map[string]string{}}
	if !agent.IsSlug(handle, 3, 32) {
		ve.Fields["handle"] = "3–32 characters of a–z, 0–9 and inner single hyphens"
	}
	switch {
	case utf8.RuneCountInString(password) < minPasswordLen:
		ve.Fields["password"] = fmt.Sprintf("at least %d characters", minPasswordLen)
	case len(password) > maxPasswordLen:
		ve.Fields["password"] = fmt.Sprintf("at most %d bytes", maxPasswordLen)
	}
	if len(ve.Fields) > 0 {
		return ve
	}
	return nil
}

// createUser validates, hashes the password and stores the account. A taken
// handle is reported as a field error.
func (s *Server) createUser(ctx context.Context, handle, password string) (store.User, error) {
	handle = strings.ToLower(strings.TrimSpace(handle))
	if err := validateSignup(handle, password); err != nil {
		return store.User{}, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.Config.BcryptCost)
	if err != nil {
		return store.User{}, fmt.Errorf("hash password: %w", err)
	}
	u, err := s.Store.CreateUser(ctx, handle, string(hash))
	if errors.Is(err, store.ErrConflict) {
		return store.User{}, &agent.ValidationError{Fields: map[string]string{"handle": "this handle is taken; choose another"}}
	}
	if err != nil {
		return store.User{}, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// errBadLogin is deliberately vague: it does not tell which part was wrong.
var errBadLogin = httpkit.Errorf(http.StatusUnauthorized, "bad_login", "Wrong handle or password.")

// newDummyHash is compared against on a login with an unknown handle, so
// that it takes as long as a wrong password and handles cannot be probed by
// timing. Its cost must be the one real passwords are hashed with (a
// cheaper one answered unknown handles 10-50x faster).
func newDummyHash(cost int) ([]byte, error) {
	h, err := bcrypt.GenerateFromPassword([]byte("agentsite-dummy-password"), cost)
	if err != nil {
		return nil, fmt.Errorf("dummy password hash: %w", err)
	}
	return h, nil
}

func (s *Server) authenticate(ctx context.Context, handle, password string) (store.User, error) {
	handle = strings.ToLower(strings.TrimSpace(handle))
	u, err := s.Store.GetUserByHandle(ctx, handle)
	if errors.Is(err, store.ErrNotFound) {
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return store.User{}, errBadLogin
	}
	if err != nil {
		return store.User{}, fmt.Errorf("look up user: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return store.User{}, errBadLogin
	}
	return u, nil
}

// logIn renews the session token (no fixation) and binds the user to it.
func (s *Server) logIn(ctx context.Context, u store.User) error {
	if err := s.sessions.RenewToken(ctx); err != nil {
		return fmt.Errorf("renew session: %w", err)
	}
	s.sessions.Put(ctx, sessUserID, u.ID)
	return nil
}

func (s *Server) logOut(ctx context.Context) error {
	if err := s.sessions.Destroy(ctx); err != nil {
		return fmt.Errorf("destroy session: %w", err)
	}
	return nil
}

// currentUser returns the logged-in user of a portal request, or nil (a
// store failure is logged and treated as anonymous, which is safe for
// pages that merely show who is logged in; requireLogin fails instead).
func (s *Server) currentUser(r *http.Request) *store.User {
	u, err := s.lookupUser(r)
	if err != nil {
		s.Logger.WarnContext(r.Context(), "loading the session user failed", "err", err)
		return nil
	}
	return u
}

// lookupUser returns the session's user, nil if anonymous (or the account
// is gone), or an error if the store failed.
func (s *Server) lookupUser(r *http.Request) (*store.User, error) {
	id := s.sessions.GetInt64(r.Context(), sessUserID)
	if id == 0 {
		return nil, nil
	}
	u, err := s.Store.GetUserByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load session user: %w", err)
	}
	return &u, nil
}

// requireLogin sends anonymous visitors to /login, remembering where they
// were going.
func (s *Server) requireLogin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.lookupUser(r)
		if err != nil {
			s.renderError(w, r, err)
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

// userFrom returns the user put in the context by requireLogin.
func userFrom(ctx context.Context) *store.User {
	u, _ := ctx.Value(userKey{}).(*store.User)
	return u
}

// API tokens look like "as_" + 32 random bytes in base64url; only their
// sha256 is stored.
const tokenPrefix = "as_"

func newAPIToken() (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("random token: %w", err)
	}
	token = tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, h[:], nil
}

var errUnauthorized = httpkit.Errorf(http.StatusUnauthorized, "unauthorized",
	"Send 'Authorization: Bearer <token>' with the operator token or a personal API token from /account.")

// apiPrincipal authenticates a bearer token: the operator token (compared in
// constant time) or a personal API token.
func (s *Server) apiPrincipal(r *http.Request) (Principal, error) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, errUnauthorized
	}
	token = strings.TrimSpace(token)
	if op := s.Config.OperatorToken; op != "" && subtle.ConstantTimeCompare([]byte(token), []byte(op)) == 1 {
		return Principal{Operator: true}, nil
	}
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 128 {
		return Principal{}, errUnauthorized
	}
	sum := sha256.Sum256([]byte(token))
	_, u, err := s.Store.UseAPIToken(r.Context(), sum[:], s.now())
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, errUnauthorized
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up API token: %w", err)
	}
	return Principal{User: &u}, nil
}
