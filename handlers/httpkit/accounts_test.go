package httpkit

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestUnknownHandleCostsLikeAPassword: a login with an unknown handle
// compares against a hash of the same cost as real passwords, so the two
// cannot be told apart by timing (it used bcrypt.MinCost: 3 ms against
// 66-363 ms).
func TestUnknownHandleCostsLikeAPassword(t *testing.T) {
	db := sqlitetest.Open(t)
	for _, cost := range []int{0, bcrypt.MinCost, 11} {
		a, err := NewAccounts(db, "", cost, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		want := cost
		if cost == 0 {
			want = bcrypt.DefaultCost
		}
		if got, err := bcrypt.Cost(a.dummyHash); err != nil || got != want {
			t.Errorf("config cost %d: dummy hash cost %d (%v), want %d", cost, got, err, want)
		}
		u, err := a.CreateUser(t.Context(), fmt.Sprintf("user-%d", cost), "long enough password")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := bcrypt.Cost([]byte(u.PasswordHash)); got != want {
			t.Errorf("password hash cost %d, want %d", got, want)
		}
		if _, err := a.Authenticate(t.Context(), "nobody-here", "long enough password"); err != ErrBadLogin {
			t.Errorf("unknown handle: %v, want ErrBadLogin", err)
		}
	}
}
