package storetest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

var accountCases = []testCase{
	{"Users", testUsers},
	{"APITokens", testAPITokens},
	{"Sessions", testSessions},
}

func testUsers(t *testing.T, s store.Store) {
	ctx := testContext(t)
	before := time.Now().Add(-time.Minute)
	alice, err := s.CreateUser(ctx, "Alice", "$argon2id$hash-a")
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if alice.ID == 0 || alice.Handle != "Alice" || alice.PasswordHash != "$argon2id$hash-a" {
		t.Errorf("CreateUser = %+v", alice)
	}
	if alice.CreatedAt.Before(before) || alice.CreatedAt.After(time.Now().Add(time.Minute)) {
		t.Errorf("CreatedAt = %v, want about now", alice.CreatedAt)
	}
	wantUTC(t, "CreatedAt", alice.CreatedAt)

	for _, h := range []string{"Alice", "alice", "ALICE"} {
		if _, err := s.CreateUser(ctx, h, "x"); !errors.Is(err, store.ErrConflict) {
			t.Errorf("CreateUser(%q) after Alice = %v, want ErrConflict", h, err)
		}
	}
	bob, err := s.CreateUser(ctx, "bob", "$argon2id$hash-b")
	if err != nil {
		t.Fatalf("CreateUser(bob): %v", err)
	}
	if bob.ID == alice.ID {
		t.Errorf("two users share id %d", bob.ID)
	}

	for _, h := range []string{"alice", "ALICE", "Alice"} {
		got, err := s.GetUserByHandle(ctx, h)
		if err != nil || got.ID != alice.ID || got.Handle != "Alice" {
			t.Errorf("GetUserByHandle(%q) = %+v, %v; want Alice", h, got, err)
		}
	}
	got, err := s.GetUserByID(ctx, alice.ID)
	if err != nil || got.Handle != "Alice" || got.PasswordHash != alice.PasswordHash || !got.CreatedAt.Equal(alice.CreatedAt) {
		t.Errorf("GetUserByID = %+v, %v; want %+v", got, err, alice)
	}
	if _, err := s.GetUserByHandle(ctx, "carol"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetUserByHandle(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := s.GetUserByID(ctx, alice.ID+bob.ID+1000); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetUserByID(unknown) = %v, want ErrNotFound", err)
	}
}

// tokenHash makes a random personal token's sha256, as the handlers store it.
func tokenHash(t *testing.T) []byte {
	t.Helper()
	h := sha256.Sum256([]byte(rand.Text()))
	return h[:]
}

func testAPITokens(t *testing.T, s store.Store) {
	ctx := testContext(t)
	alice, err := s.CreateUser(ctx, "alice", "h")
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	bob, err := s.CreateUser(ctx, "bob", "h")
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if got, err := s.ListAPITokens(ctx, alice.ID); err != nil || len(got) != 0 {
		t.Fatalf("ListAPITokens before any = %v, %v", got, err)
	}
	h1, h2, h3 := tokenHash(t), tokenHash(t), tokenHash(t)
	k1, err := s.CreateAPIToken(ctx, alice.ID, "laptop", h1)
	if err != nil {
		t.Fatalf("CreateAPIToken: %v", err)
	}
	if k1.ID == 0 || k1.UserID != alice.ID || k1.Name != "laptop" || !bytes.Equal(k1.Hash, h1) || k1.CreatedAt.IsZero() || !k1.LastUsedAt.IsZero() {
		t.Errorf("CreateAPIToken = %+v", k1)
	}
	k2, err := s.CreateAPIToken(ctx, alice.ID, "ci", h2)
	if err != nil {
		t.Fatalf("CreateAPIToken: %v", err)
	}
	kb, err := s.CreateAPIToken(ctx, bob.ID, "bob's", h3)
	if err != nil {
		t.Fatalf("CreateAPIToken: %v", err)
	}
	if _, err := s.CreateAPIToken(ctx, bob.ID, "same hash", h1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateAPIToken with a hash already stored = %v, want ErrConflict", err)
	}

	list, err := s.ListAPITokens(ctx, alice.ID)
	if err != nil {
		t.Fatalf("ListAPITokens: %v", err)
	}
	if len(list) != 2 || list[0].ID != k1.ID || list[1].ID != k2.ID {
		t.Fatalf("ListAPITokens(alice) = %+v, want laptop then ci", list)
	}

	used := now().Add(time.Second)
	k, u, err := s.UseAPIToken(ctx, h1, used)
	if err != nil {
		t.Fatalf("UseAPIToken: %v", err)
	}
	if k.ID != k1.ID || u.ID != alice.ID || u.Handle != "alice" {
		t.Errorf("UseAPIToken = %+v, %+v; want token %d of alice", k, u, k1.ID)
	}
	wantTime(t, "LastUsedAt returned by UseAPIToken", k.LastUsedAt, used)
	list, err = s.ListAPITokens(ctx, alice.ID)
	if err != nil {
		t.Fatalf("ListAPITokens: %v", err)
	}
	wantTime(t, "LastUsedAt listed", list[0].LastUsedAt, used)
	if !list[1].LastUsedAt.IsZero() {
		t.Errorf("unused token has LastUsedAt %v", list[1].LastUsedAt)
	}
	if _, _, err := s.UseAPIToken(ctx, tokenHash(t), used); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UseAPIToken(unknown) = %v, want ErrNotFound", err)
	}

	if err := s.DeleteAPIToken(ctx, bob.ID, k1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteAPIToken of another user's token = %v, want ErrNotFound", err)
	}
	if _, _, err := s.UseAPIToken(ctx, h1, used); err != nil {
		t.Errorf("token deleted by another user: %v", err)
	}
	if err := s.DeleteAPIToken(ctx, alice.ID, k1.ID); err != nil {
		t.Fatalf("DeleteAPIToken: %v", err)
	}
	if err := s.DeleteAPIToken(ctx, alice.ID, k1.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteAPIToken twice = %v, want ErrNotFound", err)
	}
	if _, _, err := s.UseAPIToken(ctx, h1, used); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("UseAPIToken of a deleted token = %v, want ErrNotFound", err)
	}
	if list, err := s.ListAPITokens(ctx, bob.ID); err != nil || len(list) != 1 || list[0].ID != kb.ID {
		t.Errorf("ListAPITokens(bob) = %+v, %v; want only bob's", list, err)
	}
}

func testSessions(t *testing.T, s store.Store) {
	ctx := testContext(t)
	wall := time.Now()
	find := func(token string) ([]byte, bool) {
		t.Helper()
		data, found, err := s.SessionFind(ctx, token)
		if err != nil {
			t.Fatalf("SessionFind(%s): %v", token, err)
		}
		return data, found
	}
	if _, found := find("missing"); found {
		t.Errorf("SessionFind(missing) found")
	}
	if err := s.SessionCommit(ctx, "tok-a", []byte("data-a1"), wall.Add(time.Hour)); err != nil {
		t.Fatalf("SessionCommit: %v", err)
	}
	if data, found := find("tok-a"); !found || string(data) != "data-a1" {
		t.Errorf("SessionFind(tok-a) = %q, %v", data, found)
	}
	if err := s.SessionCommit(ctx, "tok-a", []byte("data-a2"), wall.Add(2*time.Hour)); err != nil {
		t.Fatalf("SessionCommit (replace): %v", err)
	}
	if data, found := find("tok-a"); !found || string(data) != "data-a2" {
		t.Errorf("SessionFind(tok-a) after replace = %q, %v", data, found)
	}
	// An expired session is not found, even before it is deleted.
	if err := s.SessionCommit(ctx, "tok-old", []byte("old"), wall.Add(-time.Second)); err != nil {
		t.Fatalf("SessionCommit: %v", err)
	}
	if _, found := find("tok-old"); found {
		t.Errorf("expired session found")
	}
	if err := s.SessionCommit(ctx, "tok-b", []byte("b"), wall.Add(time.Hour)); err != nil {
		t.Fatalf("SessionCommit: %v", err)
	}
	if err := s.SessionDelete(ctx, "tok-b"); err != nil {
		t.Fatalf("SessionDelete: %v", err)
	}
	if _, found := find("tok-b"); found {
		t.Errorf("deleted session found")
	}
	if err := s.SessionDelete(ctx, "tok-b"); err != nil {
		t.Errorf("SessionDelete of a deleted session: %v", err)
	}
	// DeleteExpired as of a later time removes what expires before it, and
	// only that.
	if err := s.SessionCommit(ctx, "tok-c", []byte("c"), wall.Add(3*time.Hour)); err != nil {
		t.Fatalf("SessionCommit: %v", err)
	}
	if err := s.SessionDeleteExpired(ctx, wall.Add(150*time.Minute)); err != nil {
		t.Fatalf("SessionDeleteExpired: %v", err)
	}
	if _, found := find("tok-a"); found {
		t.Errorf("SessionDeleteExpired kept a session that expired before its time")
	}
	if data, found := find("tok-c"); !found || string(data) != "c" {
		t.Errorf("SessionDeleteExpired removed a live session")
	}
}
