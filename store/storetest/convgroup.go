package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

var conversationGroupCases = []testCase{
	{"StartConversation", testStartConversation},
	{"ConcurrentAppends", testConcurrentAppends},
}

// testStartConversation: a conversation stored with its first message
// has both, the message dated and numbered, the conversation's
// updated_at at least the message's; a taken id stores neither.
func testStartConversation(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	first := &store.Message{Role: "user", Text: "hello ✓", CreatedAt: t0.Add(time.Second)}
	c, m, err := s.StartConversation(ctx, store.Conversation{ID: "start", AgentID: "agent", OwnerKey: "user:1", Title: "Hi", CreatedAt: t0}, first)
	if err != nil {
		t.Fatalf("StartConversation: %v", err)
	}
	if c.ID != "start" || c.Title != "Hi" || m == nil || m.ID == 0 || m.ConversationID != "start" || m.Text != first.Text {
		t.Fatalf("StartConversation = %+v, %+v", c, m)
	}
	wantTime(t, "CreatedAt", c.CreatedAt, t0)
	wantTime(t, "UpdatedAt", c.UpdatedAt, t0.Add(time.Second))
	wantTime(t, "message CreatedAt", m.CreatedAt, t0.Add(time.Second))
	got, err := s.ListMessages(ctx, "start", 10)
	if err != nil || len(got) != 1 || got[0].ID != m.ID || got[0].Text != first.Text {
		t.Fatalf("ListMessages = %+v, %v; want the first message", got, err)
	}
	if stored, err := s.GetConversation(ctx, "start"); err != nil || stored.OwnerKey != "user:1" {
		t.Fatalf("GetConversation = %+v, %v", stored, err)
	}
	// A taken id: ErrConflict, and the message is not stored.
	if _, _, err := s.StartConversation(ctx, store.Conversation{ID: "start", AgentID: "agent", OwnerKey: "user:2", CreatedAt: t0},
		&store.Message{Role: "user", Text: "intruder", CreatedAt: t0}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("StartConversation with a taken id = %v, want ErrConflict", err)
	}
	if got, err := s.ListMessages(ctx, "start", 10); err != nil || len(got) != 1 {
		t.Errorf("after the conflict, ListMessages = %+v, %v; want only the first message", got, err)
	}
	// Without a first message it is CreateConversation.
	c, m, err = s.StartConversation(ctx, store.Conversation{ID: "bare", AgentID: "agent", OwnerKey: "user:1", CreatedAt: t0}, nil)
	if err != nil || m != nil || c.ID != "bare" {
		t.Fatalf("StartConversation(nil) = %+v, %+v, %v", c, m, err)
	}
	wantTime(t, "UpdatedAt", c.UpdatedAt, t0)
}

// testConcurrentAppends: many turns writing at once (new conversations
// with their first message, appends, some to a conversation that does
// not exist) each get their own answer: every acknowledged message is
// stored once, in its conversation, in the order each writer appended;
// a refused append fails alone.
func testConcurrentAppends(t *testing.T, s store.Store) {
	ctx := testContext(t)
	t0 := now().Add(-time.Hour)
	const writers, each = 16, 12
	var wg sync.WaitGroup
	errs := make(chan error, writers*(each+2))
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("conc-%02d", w)
			if _, _, err := s.StartConversation(ctx, store.Conversation{ID: id, AgentID: "agent", OwnerKey: "user:1", CreatedAt: t0},
				&store.Message{Role: "user", Text: id + " 0", CreatedAt: t0}); err != nil {
				errs <- fmt.Errorf("StartConversation %s: %w", id, err)
				return
			}
			for i := 1; i < each; i++ {
				if _, err := s.AppendMessage(ctx, store.Message{ConversationID: id, Role: "agent", Text: fmt.Sprintf("%s %d", id, i), CreatedAt: t0.Add(time.Duration(i) * time.Second)}); err != nil {
					errs <- fmt.Errorf("AppendMessage %s %d: %w", id, i, err)
				}
				if i == each/2 {
					if _, err := s.AppendMessage(ctx, store.Message{ConversationID: id + "-missing", Role: "user", Text: "x", CreatedAt: t0}); !errors.Is(err, store.ErrNotFound) {
						errs <- fmt.Errorf("AppendMessage to a missing conversation = %v, want ErrNotFound", err)
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for w := range writers {
		id := fmt.Sprintf("conc-%02d", w)
		got, err := s.ListMessages(ctx, id, 100)
		if err != nil || len(got) != each {
			t.Fatalf("ListMessages(%s) = %d messages, %v; want %d", id, len(got), err, each)
		}
		for i, m := range got {
			if want := fmt.Sprintf("%s %d", id, i); m.Text != want || m.ConversationID != id {
				t.Errorf("%s message %d = %q, want %q", id, i, m.Text, want)
			}
		}
		c, err := s.GetConversation(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wantTime(t, "UpdatedAt of "+id, c.UpdatedAt, t0.Add((each-1)*time.Second))
	}
}
