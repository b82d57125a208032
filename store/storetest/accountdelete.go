package storetest

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// accountChangeCases: changing a password and deleting an account.
var accountChangeCases = []testCase{
	{"SetPassword", testSetPassword},
	{"DeleteUser", testDeleteUser},
	{"HeldHandles", testHeldHandles},
}

// testSetPassword: the new hash replaces the old, and the user's API
// tokens go with the old password (another user's stay).
func testSetPassword(t *testing.T, s store.Store) {
	ctx := testContext(t)
	u, err := s.CreateUser(ctx, "pw-user", "old-hash")
	if err != nil {
		t.Fatal(err)
	}
	other, err := s.CreateUser(ctx, "pw-other", "hash")
	if err != nil {
		t.Fatal(err)
	}
	for i, owner := range []store.User{u, u, other} {
		if _, err := s.CreateAPIToken(ctx, owner.ID, "t", []byte("pw-token-"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	revoked, err := s.SetPassword(ctx, u.ID, "new-hash")
	if err != nil {
		t.Fatal(err)
	}
	if revoked != 2 {
		t.Errorf("SetPassword revoked %d tokens, want 2", revoked)
	}
	if got, err := s.GetUserByID(ctx, u.ID); err != nil || got.PasswordHash != "new-hash" {
		t.Errorf("after SetPassword: %+v, %v", got, err)
	}
	if ts, err := s.ListAPITokens(ctx, u.ID); err != nil || len(ts) != 0 {
		t.Errorf("the user's tokens after SetPassword: %v, %v; want none", ts, err)
	}
	if _, _, err := s.UseAPIToken(ctx, []byte("pw-token-0"), time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an old token after SetPassword = %v, want ErrNotFound", err)
	}
	if _, _, err := s.UseAPIToken(ctx, []byte("pw-token-2"), time.Now()); err != nil {
		t.Errorf("the other user's token after SetPassword: %v", err)
	}
	if revoked, err := s.SetPassword(ctx, u.ID, "newer-hash"); err != nil || revoked != 0 {
		t.Errorf("SetPassword again = %d, %v; want 0 revoked", revoked, err)
	}
	if _, err := s.SetPassword(ctx, u.ID+1000, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPassword of no user = %v, want ErrNotFound", err)
	}
}

// testHeldHandles: a deleted account's handle is refused, in any case,
// until its hold ends (a *HandleHeldError saying when, which is also an
// ErrConflict); a hold that ended lets it be signed up again, and a zero
// hold holds nothing.
func testHeldHandles(t *testing.T, s store.Store) {
	ctx := testContext(t)
	now := time.Now().UTC()
	create := func(handle string) store.User {
		t.Helper()
		u, err := s.CreateUser(ctx, handle, "h")
		if err != nil {
			t.Fatalf("CreateUser(%s): %v", handle, err)
		}
		return u
	}
	del := func(u store.User, until time.Time) {
		t.Helper()
		if err := s.DeleteUser(ctx, u.ID, "user:"+strconv.FormatInt(u.ID, 10), until); err != nil {
			t.Fatal(err)
		}
	}

	held := now.Add(time.Hour)
	del(create("held-bob"), held)
	for _, h := range []string{"held-bob", "Held-Bob"} {
		_, err := s.CreateUser(ctx, h, "h")
		he, ok := errors.AsType[*store.HandleHeldError](err)
		if !ok {
			t.Fatalf("CreateUser(%s) just after its deletion = %v, want a *HandleHeldError", h, err)
		}
		if !errors.Is(err, store.ErrConflict) {
			t.Errorf("a held handle is not an ErrConflict: %v", err)
		}
		if d := he.Until.Sub(held); d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("held until %v, want %v", he.Until, held)
		}
	}
	if _, err := s.GetUserByHandle(ctx, "held-bob"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused sign-up made the user: %v", err)
	}

	// A hold that has ended (deleted long ago) lets the handle go.
	del(create("held-carol"), now.Add(-time.Minute))
	carol := create("held-carol")
	// A later deletion holds it again; a zero hold holds nothing.
	del(carol, held)
	if _, err := s.CreateUser(ctx, "held-carol", "h"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateUser after a second deletion = %v, want held", err)
	}
	del(create("held-dave"), time.Time{})
	create("held-dave")
	// Other handles are free.
	create("held-erin")
}

// testDeleteUser: the user, its tokens and its conversations (messages
// too) go; another user's stay.
func testDeleteUser(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := time.Now().UTC().Truncate(time.Millisecond)
	gone, err := s.CreateUser(ctx, "leaving", "h")
	if err != nil {
		t.Fatal(err)
	}
	stay, err := s.CreateUser(ctx, "staying", "h")
	if err != nil {
		t.Fatal(err)
	}
	key := func(u store.User) string { return "user:" + strconv.FormatInt(u.ID, 10) }
	for _, u := range []store.User{gone, stay} {
		if _, err := s.CreateAPIToken(ctx, u.ID, "t", []byte("hash-"+u.Handle)); err != nil {
			t.Fatal(err)
		}
		c, err := s.CreateConversation(ctx, store.Conversation{ID: "conv-" + u.Handle, AgentID: "agent-1", OwnerKey: key(u), CreatedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessage(ctx, store.Message{ConversationID: c.ID, Role: "user", Text: "hi", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteUser(ctx, gone.ID, key(gone), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUserByID(ctx, gone.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted user still found: %v", err)
	}
	if _, _, err := s.UseAPIToken(ctx, []byte("hash-leaving"), t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleted user's token still works: %v", err)
	}
	if cs, err := s.ListConversations(ctx, key(gone), 10); err != nil || len(cs) != 0 {
		t.Errorf("deleted user's conversations: %v, %v", cs, err)
	}
	if ms, err := s.ListMessages(ctx, "conv-leaving", 10); err == nil && len(ms) != 0 {
		t.Errorf("deleted user's messages: %v", ms)
	}
	if cs, err := s.ListConversations(ctx, key(stay), 10); err != nil || len(cs) != 1 {
		t.Errorf("the other user's conversations: %v, %v", cs, err)
	}
	if _, _, err := s.UseAPIToken(ctx, []byte("hash-staying"), t0); err != nil {
		t.Errorf("the other user's token: %v", err)
	}
	if err := s.DeleteUser(ctx, gone.ID, key(gone), time.Time{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting again = %v, want ErrNotFound", err)
	}
}
