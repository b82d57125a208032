package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

var conversationCases = []testCase{
	{"Conversations", testConversations},
	{"Messages", testMessages},
	{"RenameDeleteConversation", testRenameDeleteConversation},
	{"DeleteMessagesFrom", testDeleteMessagesFrom},
	{"SearchConversations", testSearchConversations},
	{"ShareConversation", testShareConversation},
}

// testRenameDeleteConversation: a rename changes the title only; a delete
// takes the messages with it; both report a missing conversation.
func testRenameDeleteConversation(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	c, err := s.CreateConversation(ctx, store.Conversation{ID: "conv-r", AgentID: "agent-1", OwnerKey: "user:1", Title: "Old", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, store.Message{ConversationID: c.ID, Role: "user", Text: "hi", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	r, err := s.RenameConversation(ctx, c.ID, "New title")
	if err != nil {
		t.Fatalf("RenameConversation: %v", err)
	}
	if r.Title != "New title" || r.ID != c.ID || r.OwnerKey != c.OwnerKey || r.AgentID != c.AgentID {
		t.Errorf("RenameConversation = %+v", r)
	}
	wantTime(t, "UpdatedAt after a rename", r.UpdatedAt, t0)
	if got, err := s.GetConversation(ctx, c.ID); err != nil || got.Title != "New title" {
		t.Errorf("GetConversation after rename = %+v, %v", got, err)
	}
	if _, err := s.RenameConversation(ctx, "conv-missing", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RenameConversation(missing) = %v, want ErrNotFound", err)
	}
	other, err := s.CreateConversation(ctx, store.Conversation{ID: "conv-keep", AgentID: "agent-1", OwnerKey: "user:1", CreatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, store.Message{ConversationID: other.ID, Role: "user", Text: "stay", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConversation(ctx, c.ID); err != nil {
		t.Fatalf("DeleteConversation: %v", err)
	}
	if _, err := s.GetConversation(ctx, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetConversation after delete = %v, want ErrNotFound", err)
	}
	if ms, err := s.ListMessages(ctx, c.ID, 10); err != nil || len(ms) != 0 {
		t.Errorf("messages of a deleted conversation = %+v, %v; want none", ms, err)
	}
	if ms, err := s.ListMessages(ctx, other.ID, 10); err != nil || len(ms) != 1 {
		t.Errorf("messages of another conversation after a delete = %+v, %v; want its one", ms, err)
	}
	if err := s.DeleteConversation(ctx, c.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteConversation twice = %v, want ErrNotFound", err)
	}
}

// testDeleteMessagesFrom: the message named and every later one go, in
// that conversation only.
func testDeleteMessagesFrom(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	var ids []int64
	for _, id := range []string{"conv-x", "conv-y"} {
		if _, err := s.CreateConversation(ctx, store.Conversation{ID: id, AgentID: "agent-1", OwnerKey: "user:1", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for i, text := range []string{"one", "two", "three", "four"} {
		for _, conv := range []string{"conv-x", "conv-y"} {
			m, err := s.AppendMessage(ctx, store.Message{ConversationID: conv, Role: "user", Text: text, CreatedAt: t0.Add(time.Duration(i) * time.Second)})
			if err != nil {
				t.Fatal(err)
			}
			if conv == "conv-x" {
				ids = append(ids, m.ID)
			}
		}
	}
	if err := s.DeleteMessagesFrom(ctx, "conv-x", ids[2]); err != nil {
		t.Fatalf("DeleteMessagesFrom: %v", err)
	}
	texts := func(conv string) string {
		ms, err := s.ListMessages(ctx, conv, 10)
		if err != nil {
			t.Fatal(err)
		}
		out := ""
		for _, m := range ms {
			out += m.Text + " "
		}
		return out
	}
	if got := texts("conv-x"); got != "one two " {
		t.Errorf("conv-x after DeleteMessagesFrom = %q, want %q", got, "one two ")
	}
	if got := texts("conv-y"); got != "one two three four " {
		t.Errorf("conv-y after DeleteMessagesFrom on conv-x = %q", got)
	}
}

func testConversations(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	create := func(c store.Conversation) store.Conversation {
		t.Helper()
		got, err := s.CreateConversation(ctx, c)
		if err != nil {
			t.Fatalf("CreateConversation(%s): %v", c.ID, err)
		}
		return got
	}
	a := create(store.Conversation{ID: "conv-a", AgentID: "agent-1", OwnerKey: "user:1", AgentOwner: "alice", AgentPublisher: "12D3KooWPublisher",
		Title: "About rain", CreatedAt: t0, UpdatedAt: t0})
	if a.ID != "conv-a" || a.AgentID != "agent-1" || a.OwnerKey != "user:1" || a.Title != "About rain" {
		t.Errorf("CreateConversation = %+v", a)
	}
	if a.AgentOwner != "alice" || a.AgentPublisher != "12D3KooWPublisher" {
		t.Errorf("CreateConversation: agent owner/publisher = %q/%q, want alice/12D3KooWPublisher (what binds a conversation to its agent)", a.AgentOwner, a.AgentPublisher)
	}
	wantTime(t, "CreatedAt", a.CreatedAt, t0)
	wantTime(t, "UpdatedAt", a.UpdatedAt, t0)
	b := create(store.Conversation{ID: "conv-b", AgentID: "agent-2", OwnerKey: "user:1", CreatedAt: t0.Add(time.Minute)})
	wantTime(t, "UpdatedAt defaults to CreatedAt", b.UpdatedAt, b.CreatedAt)
	create(store.Conversation{ID: "conv-c", AgentID: "agent-1", OwnerKey: "anon:xyz", CreatedAt: t0.Add(2 * time.Minute)})
	if _, err := s.CreateConversation(ctx, store.Conversation{ID: "conv-a", AgentID: "x", OwnerKey: "user:2", CreatedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateConversation with a used id = %v, want ErrConflict", err)
	}

	ids := func(cs []store.Conversation) string {
		out := ""
		for _, c := range cs {
			out += c.ID + " "
		}
		return out
	}
	list := func(owner string, limit int) []store.Conversation {
		t.Helper()
		cs, err := s.ListConversations(ctx, owner, limit)
		if err != nil {
			t.Fatalf("ListConversations(%s): %v", owner, err)
		}
		return cs
	}
	if got := ids(list("user:1", 10)); got != "conv-b conv-a " {
		t.Errorf("ListConversations(user:1) = %s, want latest first: conv-b conv-a", got)
	}
	if got := ids(list("user:1", 1)); got != "conv-b " {
		t.Errorf("ListConversations(user:1, 1) = %s, want conv-b", got)
	}
	if got := ids(list("anon:xyz", 10)); got != "conv-c " {
		t.Errorf("ListConversations(anon:xyz) = %s", got)
	}
	if got := list("user:99", 10); len(got) != 0 {
		t.Errorf("ListConversations(nobody) = %v", got)
	}

	// A message moves its conversation to the top.
	at := t0.Add(10 * time.Minute)
	if _, err := s.AppendMessage(ctx, store.Message{ConversationID: "conv-a", Role: "user", Text: "hi", CreatedAt: at}); err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	if got := ids(list("user:1", 10)); got != "conv-a conv-b " {
		t.Errorf("ListConversations after a message in conv-a = %s, want conv-a first", got)
	}
	got, err := s.GetConversation(ctx, "conv-a")
	if err != nil {
		t.Fatalf("GetConversation: %v", err)
	}
	wantTime(t, "UpdatedAt after AppendMessage", got.UpdatedAt, at)
	if got.AgentOwner != "alice" || got.AgentPublisher != "12D3KooWPublisher" {
		t.Errorf("GetConversation: agent owner/publisher = %q/%q, want alice/12D3KooWPublisher", got.AgentOwner, got.AgentPublisher)
	}
	wantTime(t, "CreatedAt after AppendMessage", got.CreatedAt, t0)
	// A message stamped earlier (a slow reply) does not move it back.
	if _, err := s.AppendMessage(ctx, store.Message{ConversationID: "conv-a", Role: "agent", Text: "late", CreatedAt: at.Add(-time.Minute)}); err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	if got, err := s.GetConversation(ctx, "conv-a"); err != nil {
		t.Fatalf("GetConversation: %v", err)
	} else {
		wantTime(t, "UpdatedAt after an earlier-stamped message", got.UpdatedAt, at)
	}
	if _, err := s.GetConversation(ctx, "conv-zzz"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetConversation(unknown) = %v, want ErrNotFound", err)
	}
}

func testMessages(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	if _, err := s.CreateConversation(ctx, store.Conversation{ID: "chat", AgentID: "agent", OwnerKey: "user:1", CreatedAt: t0}); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	if _, err := s.CreateConversation(ctx, store.Conversation{ID: "other", AgentID: "agent", OwnerKey: "user:1", CreatedAt: t0}); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	roles := []string{"user", "agent", "user", "error", "user"}
	var want []store.Message
	for i, role := range roles {
		m, err := s.AppendMessage(ctx, store.Message{ConversationID: "chat", Role: role,
			Text: fmt.Sprintf("message %d: ünïcode ✓\nsecond line", i), CreatedAt: t0.Add(time.Duration(i+1) * time.Second)})
		if err != nil {
			t.Fatalf("AppendMessage: %v", err)
		}
		if m.ID == 0 || (len(want) > 0 && m.ID == want[len(want)-1].ID) {
			t.Errorf("AppendMessage returned id %d", m.ID)
		}
		want = append(want, m)
		if _, err := s.AppendMessage(ctx, store.Message{ConversationID: "other", Role: "user", Text: "noise", CreatedAt: t0}); err != nil {
			t.Fatalf("AppendMessage: %v", err)
		}
	}
	if _, err := s.AppendMessage(ctx, store.Message{ConversationID: "nope", Role: "user", Text: "x", CreatedAt: t0}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendMessage to an unknown conversation = %v, want ErrNotFound", err)
	}

	for _, c := range []struct{ limit, from int }{{3, 2}, {5, 0}, {50, 0}, {1, 4}} {
		got, err := s.ListMessages(ctx, "chat", c.limit)
		if err != nil {
			t.Fatalf("ListMessages(%d): %v", c.limit, err)
		}
		exp := want[c.from:]
		if len(got) != len(exp) {
			t.Errorf("ListMessages(%d) = %d messages, want the last %d", c.limit, len(got), len(exp))
			continue
		}
		for i := range got {
			g, w := got[i], exp[i]
			if g.ID != w.ID || g.ConversationID != "chat" || g.Role != w.Role || g.Text != w.Text {
				t.Errorf("ListMessages(%d)[%d] = %+v, want %+v (oldest first)", c.limit, i, g, w)
			}
			wantTime(t, "message CreatedAt", g.CreatedAt, w.CreatedAt)
		}
	}
	last := want[len(want)-1].ID
	for _, c := range []struct {
		conv     string
		from     int64
		n        int
		wantLast int64
	}{{"chat", 0, 5, last}, {"chat", want[2].ID, 3, last}, {"chat", last, 1, last}, {"chat", last + 1, 0, 0}, {"empty-or-unknown", 0, 0, 0}} {
		n, got, err := s.MessageTail(ctx, c.conv, c.from)
		if err != nil || n != c.n || got != c.wantLast {
			t.Errorf("MessageTail(%s, %d) = %d, %d, %v; want %d, %d", c.conv, c.from, n, got, err, c.n, c.wantLast)
		}
	}
	if got, err := s.ListMessages(ctx, "empty-or-unknown", 10); err != nil || len(got) != 0 {
		t.Errorf("ListMessages(unknown) = %v, %v; want none", got, err)
	}
	// A long conversation: a read may take more than a search page (the
	// chat page shows 200), up to MaxMessages.
	for i := range 150 {
		if _, err := s.AppendMessage(ctx, store.Message{ConversationID: "other", Role: "user", Text: fmt.Sprint(i), CreatedAt: t0}); err != nil {
			t.Fatalf("AppendMessage: %v", err)
		}
	}
	for limit, want := range map[int]int{201: 155, 120: 120, store.MaxMessages + 1: 155} {
		if got, err := s.ListMessages(ctx, "other", limit); err != nil || len(got) != want {
			t.Errorf("ListMessages(other, %d) = %d messages (%v), want %d", limit, len(got), err, want)
		}
	}
}
