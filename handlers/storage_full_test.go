package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
)

// fullSessions is a store whose session writes fail for lack of room
// while full is set, as on a node opened read-only on a full disk.
type fullSessions struct {
	store.Store
	full atomic.Bool
}

func (f *fullSessions) SessionCommit(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if f.full.Load() {
		return fmt.Errorf("sqlite: commit session: %w", store.ErrStorageFull)
	}
	return f.Store.SessionCommit(ctx, token, b, expiry)
}

// TestSessionOnFullDisk: on a full disk a visitor with a session still
// reads pages (the session's idle expiry is not moved on), and a form
// that changes the session gets the 507 page saying the disk is full.
func TestSessionOnFullDisk(t *testing.T) {
	st := &fullSessions{Store: OpenSQLite(t)}
	e := NewWith(t, st)
	e.Signup("fullness", "fullness-password-1")
	st.full.Store(true)
	for _, path := range []string{"/", "/agents", "/account"} {
		resp := e.Do(http.MethodGet, path, nil)
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(resp.Body)
			t.Errorf("GET %s with a session on a full disk: %d %.300s", path, resp.StatusCode, body)
		}
	}
	resp := e.PostForm("/logout", url.Values{})
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInsufficientStorage || !strings.Contains(string(body), "disk is full") {
		t.Errorf("log out on a full disk: %d %.300s, want the 507 page", resp.StatusCode, body)
	}
}
