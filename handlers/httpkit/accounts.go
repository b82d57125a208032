package httpkit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/store"
)

// AccountStore keeps portal accounts and their API tokens.
type AccountStore interface {
	CreateUser(ctx context.Context, handle, passwordHash string) (store.User, error)
	GetUserByHandle(ctx context.Context, handle string) (store.User, error)
	UseAPIToken(ctx context.Context, hash []byte, now time.Time) (store.APIToken, store.User, error)
}

// Accounts signs people up, checks passwords and authenticates bearer
// tokens (the operator token or a personal API token).
type Accounts struct {
	Store         AccountStore
	OperatorToken string // empty: no operator token
	BcryptCost    int
	Now           func() time.Time
	dummyHash     []byte // see newDummyHash
}

// NewAccounts hashes with cost (0: bcrypt.DefaultCost).
func NewAccounts(st AccountStore, operatorToken string, cost int, now func() time.Time) (*Accounts, error) {
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	dummy, err := newDummyHash(cost)
	if err != nil {
		return nil, err
	}
	return &Accounts{Store: st, OperatorToken: operatorToken, BcryptCost: cost, Now: now, dummyHash: dummy}, nil
}

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

// ValidateSignup checks a handle and a password against the rules.
func ValidateSignup(handle, password string) error {
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

// HandleHold is how long the handle of a deleted account stays held
// (store.Accounts.DeleteUser): long enough for the network to forget the
// account's agents (their deletions are announced, and a listing no one
// refreshes expires well within it) and for people to notice it is gone.
const HandleHold = 30 * 24 * time.Hour

// CreateUser validates, hashes the password and stores the account. A taken
// handle, or one held after its account's deletion, is reported as a field
// error.
func (s *Accounts) CreateUser(ctx context.Context, handle, password string) (store.User, error) {
	handle = strings.ToLower(strings.TrimSpace(handle))
	if err := ValidateSignup(handle, password); err != nil {
		return store.User{}, err
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.BcryptCost)
	if err != nil {
		return store.User{}, fmt.Errorf("hash password: %w", err)
	}
	u, err := s.Store.CreateUser(ctx, handle, string(hash))
	if he, ok := errors.AsType[*store.HandleHeldError](err); ok {
		return store.User{}, &agent.ValidationError{Fields: map[string]string{"handle": fmt.Sprintf(
			"belonged to an account deleted lately and is held until %s, so that no one who knew @%s reaches someone else; choose another handle, or come back then",
			he.Until.UTC().Format("2 January 2006 15:04 MST"), handle)}}
	}
	if errors.Is(err, store.ErrConflict) {
		return store.User{}, &agent.ValidationError{Fields: map[string]string{"handle": "this handle is taken; choose another"}}
	}
	if err != nil {
		return store.User{}, fmt.Errorf("create user: %w", err)
	}
	return u, nil
}

// ErrBadLogin is deliberately vague: it does not tell which part was wrong.
var ErrBadLogin = Errorf(http.StatusUnauthorized, string(agent.CodeBadLogin), "Wrong handle or password.")

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

func (s *Accounts) Authenticate(ctx context.Context, handle, password string) (store.User, error) {
	handle = strings.ToLower(strings.TrimSpace(handle))
	u, err := s.Store.GetUserByHandle(ctx, handle)
	if errors.Is(err, store.ErrNotFound) {
		_ = bcrypt.CompareHashAndPassword(s.dummyHash, []byte(password))
		return store.User{}, ErrBadLogin
	}
	if err != nil {
		return store.User{}, fmt.Errorf("look up user: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return store.User{}, ErrBadLogin
	}
	return u, nil
}

// TokenPrefix starts every API token. API tokens look like "as_" + 32 random bytes in base64url; only their
// sha256 is stored.
const TokenPrefix = "as_"

func NewAPIToken() (token string, hash []byte, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("random token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(token))
	return token, h[:], nil
}

var ErrUnauthorized = Errorf(http.StatusUnauthorized, string(agent.CodeUnauthorized),
	"Send 'Authorization: Bearer <token>' with the operator token or a personal API token from /account.")

// ErrBadToken is the refusal of a bearer token that was sent but is not
// one this node accepts: it says so, and what to do, rather than asking
// for a token again.
var ErrBadToken = Errorf(http.StatusUnauthorized, string(agent.CodeUnauthorized),
	"The bearer token is wrong, or was revoked or expired. Check that it was copied whole; or make a new personal API token on /account (the operator token is the one the node printed at start, or its --operator-token).")

// IsOperator reports whether r carries the operator token (compared in
// constant time), without touching the store.
func (s *Accounts) IsOperator(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	op := s.OperatorToken
	return ok && op != "" && strings.EqualFold(scheme, "Bearer") &&
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(op)) == 1
}

// Bearer authenticates a bearer token: the operator token (compared in
// constant time) or a personal API token.
func (s *Accounts) Bearer(r *http.Request) (Principal, error) {
	if p, ok := principalOf(r); ok { // looked up already (WithPrincipal)
		return p, nil
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return Principal{}, ErrUnauthorized
	}
	token = strings.TrimSpace(token)
	if op := s.OperatorToken; op != "" && subtle.ConstantTimeCompare([]byte(token), []byte(op)) == 1 {
		return Principal{Operator: true}, nil
	}
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 128 {
		return Principal{}, ErrBadToken
	}
	sum := sha256.Sum256([]byte(token))
	_, u, err := s.Store.UseAPIToken(r.Context(), sum[:], s.Now().UTC())
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, ErrBadToken
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up API token: %w", err)
	}
	return Principal{User: &u}, nil
}
