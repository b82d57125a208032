package httpkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// PasswordChanger is what changing a password needs of the store.
type PasswordChanger interface {
	GetUserByID(ctx context.Context, id int64) (store.User, error)
	SetPassword(ctx context.Context, userID int64, passwordHash string) (revoked int, err error)
}

// PasswordStamp names the password a session was opened with: a session
// whose stamp is not its account's current one (the password changed, or
// the account is gone) is signed out (Sessions.Stamp). The hash of the
// bcrypt hash, so the session holds nothing that helps guess the password.
func PasswordStamp(passwordHash string) string {
	sum := sha256.Sum256([]byte(passwordHash))
	return hex.EncodeToString(sum[:8])
}

// ChangePassword checks the current password and sets the new one, which
// revokes the account's API tokens (it returns how many): whoever had the
// old password may have made one. The fields of a ValidationError:
// "current_password" (wrong), "password" (the rules), "password_confirm"
// (no match).
func (s *Accounts) ChangePassword(ctx context.Context, st PasswordChanger, userID int64, current, password, confirm string) (revoked int, err error) {
	u, err := st.GetUserByID(ctx, userID)
	if err != nil {
		return 0, fmt.Errorf("load user: %w", err)
	}
	ve := &agent.ValidationError{Fields: map[string]string{}}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) != nil {
		ve.Fields["current_password"] = "is not your current password"
	}
	switch {
	case password == "":
		ve.Fields["password"] = "is required"
	case utf8.RuneCountInString(password) < minPasswordLen:
		ve.Fields["password"] = fmt.Sprintf("at least %d characters", minPasswordLen)
	case len(password) > maxPasswordLen:
		ve.Fields["password"] = fmt.Sprintf("at most %d bytes", maxPasswordLen)
	case confirm != password:
		ve.Fields["password_confirm"] = "does not match the new password"
	}
	if len(ve.Fields) > 0 {
		return 0, ve
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(password), s.BcryptCost)
	if err != nil {
		return 0, fmt.Errorf("hash password: %w", err)
	}
	revoked, err = st.SetPassword(ctx, userID, string(hash))
	if err != nil {
		return 0, fmt.Errorf("set password: %w", err)
	}
	return revoked, nil
}

// CheckPassword reports whether password is userID's (account deletion
// asks for it again).
func (s *Accounts) CheckPassword(ctx context.Context, st PasswordChanger, userID int64, password string) (bool, error) {
	u, err := st.GetUserByID(ctx, userID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("load user: %w", err)
	}
	return bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) == nil, nil
}
