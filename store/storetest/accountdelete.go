package storetest

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// accountChangeCases: changing a password and deleting an account
// (issue 23).
var accountChangeCases = []testCase{
	{"SetPassword", testSetPassword},
	{"DeleteUser", testDeleteUser},
}

func testSetPassword(t *testing.T, s store.Store) {
	ctx := testContext(t)
	u, err := s.CreateUser(ctx, "pw-user", "old-hash")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetPassword(ctx, u.ID, "new-hash"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetUserByID(ctx, u.ID); err != nil || got.PasswordHash != "new-hash" {
		t.Errorf("after SetPassword: %+v, %v", got, err)
	}
	if err := s.SetPassword(ctx, u.ID+1000, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("SetPassword of no user = %v, want ErrNotFound", err)
	}
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
	if err := s.DeleteUser(ctx, gone.ID, key(gone)); err != nil {
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
	if err := s.DeleteUser(ctx, gone.ID, key(gone)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting again = %v, want ErrNotFound", err)
	}
}
