package storetest

import (
	"crypto/sha256"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// testSearchConversations: a search finds only the owner's conversations,
// by title or by a user or agent message, case-insensitively, with % and _
// taken literally; latest first, at most limit.
func testSearchConversations(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	convs := []struct {
		id, owner, title string
		msgs             [][2]string // role, text
	}{
		{"c-title", "user:1", "Weather in Lisbon", nil},
		{"c-user", "user:1", "", [][2]string{{"user", "what is the WEATHER like"}, {"agent", "sunny"}}},
		{"c-agent", "user:1", "Trip", [][2]string{{"user", "hello"}, {"agent", "The weather is fine."}}},
		{"c-none", "user:1", "Recipes", [][2]string{{"user", "soup"}, {"agent", "carrots"}}},
		{"c-step", "user:1", "Tools", [][2]string{{"step", `{"tool":"weather"}`}}},
		{"c-other", "user:2", "Weather too", [][2]string{{"user", "weather"}}},
		{"c-pct", "anon:x", "100% sure", [][2]string{{"user", "snake_case"}}},
		{"c-nopct", "anon:x", "1000 sure", [][2]string{{"user", "snakeXcase"}}},
	}
	for i, c := range convs {
		at := t0.Add(time.Duration(i) * time.Minute)
		if _, err := s.CreateConversation(ctx, store.Conversation{ID: c.id, AgentID: "agent-1", OwnerKey: c.owner, Title: c.title, CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
		for _, m := range c.msgs {
			if _, err := s.AppendMessage(ctx, store.Message{ConversationID: c.id, Role: m[0], Text: m[1], CreatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ids := func(owner, q string, limit int) []string {
		t.Helper()
		cs, err := s.SearchConversations(ctx, owner, q, limit)
		if err != nil {
			t.Fatalf("SearchConversations(%q, %q): %v", owner, q, err)
		}
		out := []string{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	for _, tc := range []struct {
		owner, q string
		limit    int
		want     []string
	}{
		{"user:1", "weather", 10, []string{"c-agent", "c-user", "c-title"}},
		{"user:1", "wEaThEr", 10, []string{"c-agent", "c-user", "c-title"}},
		{"user:1", "weather", 2, []string{"c-agent", "c-user"}},
		{"user:2", "weather", 10, []string{"c-other"}},
		{"user:3", "weather", 10, []string{}},
		{"user:1", "carrots", 10, []string{"c-none"}},
		{"user:1", "", 10, []string{}},
		{"user:1", "%", 10, []string{}},
		{"user:1", "_", 10, []string{}},
		{"anon:x", "%", 10, []string{"c-pct"}},
		{"anon:x", "e_c", 10, []string{"c-pct"}},
		{"anon:x", `\`, 10, []string{}},
	} {
		if got := ids(tc.owner, tc.q, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("SearchConversations(%q, %q, %d) = %v, want %v", tc.owner, tc.q, tc.limit, got, tc.want)
		}
	}
	// A q longer than the bound is cut, not refused.
	if got := ids("user:1", "weather"+strings.Repeat("x", store.MaxConversationQuery), 10); len(got) != 0 {
		t.Errorf("an over-long q found %v", got)
	}
}

// testShareConversation: a share link finds its conversation by the
// token's hash until it is revoked or replaced; the link goes with the
// conversation.
func testShareConversation(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	for _, id := range []string{"c-1", "c-2"} {
		if _, err := s.CreateConversation(ctx, store.Conversation{ID: id, AgentID: "agent-1", OwnerKey: "user:1", Title: id, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	h1, h2, h3 := sha256.Sum256([]byte("one")), sha256.Sum256([]byte("two")), sha256.Sum256([]byte("three"))
	shared := func(id string, want bool) {
		t.Helper()
		if got, err := s.ConversationShared(ctx, id); err != nil || got != want {
			t.Errorf("ConversationShared(%s) = %v, %v; want %v", id, got, err, want)
		}
	}
	finds := func(h [32]byte, want string) {
		t.Helper()
		c, err := s.SharedConversation(ctx, h[:])
		if want == "" {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("SharedConversation = %+v, %v; want ErrNotFound", c, err)
			}
			return
		}
		if err != nil || c.ID != want || c.OwnerKey != "user:1" {
			t.Errorf("SharedConversation = %+v, %v; want %s", c, err, want)
		}
	}
	shared("c-1", false)
	finds(h1, "")
	if err := s.ShareConversation(ctx, "c-1", h1[:], t0); err != nil {
		t.Fatalf("ShareConversation: %v", err)
	}
	shared("c-1", true)
	shared("c-2", false)
	finds(h1, "c-1")
	// A new link replaces the old one.
	if err := s.ShareConversation(ctx, "c-1", h2[:], t0); err != nil {
		t.Fatal(err)
	}
	finds(h1, "")
	finds(h2, "c-1")
	if err := s.ShareConversation(ctx, "c-missing", h3[:], t0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ShareConversation(missing) = %v, want ErrNotFound", err)
	}
	if err := s.ShareConversation(ctx, "c-2", h2[:], t0); !errors.Is(err, store.ErrConflict) {
		t.Errorf("ShareConversation with a hash in use = %v, want ErrConflict", err)
	}
	if err := s.UnshareConversation(ctx, "c-1"); err != nil {
		t.Fatal(err)
	}
	finds(h2, "")
	shared("c-1", false)
	if err := s.UnshareConversation(ctx, "c-1"); err != nil {
		t.Errorf("UnshareConversation twice = %v, want nil", err)
	}
	if err := s.ShareConversation(ctx, "c-2", h3[:], t0); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConversation(ctx, "c-2"); err != nil {
		t.Fatal(err)
	}
	finds(h3, "")
}
