package searchindex_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TestMessageCache: a continued turn reads its conversation's newest
// messages from memory (the read cache's Conversations), and what it reads
// is always what the engine holds: after writes through the cache, after
// writes that pass it by (another process, an account's deletion),
// after deletions, for reads longer than it keeps, and while many
// appends to one conversation race.
func TestMessageCache(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"sqlite":   func(t *testing.T) store.Store { return sqlitetest.Open(t) },
		"postgres": func(t *testing.T) store.Store { return pgtest.Open(t) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			e := open(t)
			c := store.NewCache(e, time.Hour, 100)
			cc := c.Conversations(e)
			t0 := time.Now().UTC().Add(-time.Hour)
			// same reads limit messages of conv through the cache and from
			// the engine, and says whether the cache answered.
			same := func(what, conv string, limit int) (hit bool) {
				t.Helper()
				h0, _ := c.TailStats()
				got, err := cc.ListMessages(ctx, conv, limit)
				if err != nil {
					t.Fatalf("%s: ListMessages through the cache: %v", what, err)
				}
				h1, _ := c.TailStats()
				want, err := e.ListMessages(ctx, conv, limit)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.EqualFunc(got, want, func(a, b store.Message) bool {
					return a.ID == b.ID && a.Role == b.Role && a.Text == b.Text && a.ConversationID == b.ConversationID && a.CreatedAt.Equal(b.CreatedAt)
				}) {
					t.Fatalf("%s: ListMessages(%s, %d) through the cache = %v, the engine holds %v", what, conv, limit, got, want)
				}
				return h1 > h0
			}
			appendVia := func(s store.Conversations, conv, text string) store.Message {
				t.Helper()
				m, err := s.AppendMessage(ctx, store.Message{ConversationID: conv, Role: "user", Text: text, CreatedAt: t0})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}

			first := store.Message{Role: "user", Text: "hello"}
			if _, _, err := cc.StartConversation(ctx, store.Conversation{ID: "conv-a", AgentID: "agent-1", OwnerKey: "user:1", CreatedAt: t0}, &first); err != nil {
				t.Fatal(err)
			}
			if !same("a new conversation", "conv-a", 40) {
				t.Error("a new conversation's first message was read from the engine")
			}
			appendVia(cc, "conv-a", "reply")
			appendVia(cc, "conv-a", "again")
			for _, limit := range []int{40, 2, 1} {
				if !same(fmt.Sprintf("after appends through the cache, limit %d", limit), "conv-a", limit) {
					t.Errorf("limit %d: messages appended through the cache were read from the engine", limit)
				}
			}

			// Another process appends: the cache's check sees it.
			appendVia(e, "conv-a", "from elsewhere")
			if same("after an append that passed the cache by", "conv-a", 40) {
				t.Error("the cache answered although another process had appended")
			}
			if !same("read again", "conv-a", 40) {
				t.Error("the refilled entry was not used")
			}
			// Another process appends while this one does: the entry,
			// extended by this one's message, misses the other's.
			appendVia(e, "conv-a", "from elsewhere, meanwhile")
			appendVia(cc, "conv-a", "from here")
			if same("after an append that passed the cache by, then one through it", "conv-a", 40) {
				t.Error("the cache answered without another process's message")
			}
			// Another process deletes the last exchange, then writes a
			// new one: the same count, another last id.
			ms, _ := e.ListMessages(ctx, "conv-a", 40)
			if err := e.DeleteMessagesFrom(ctx, "conv-a", ms[len(ms)-1].ID); err != nil {
				t.Fatal(err)
			}
			same("after a delete that passed the cache by", "conv-a", 40)
			appendVia(cc, "conv-a", "after the delete")
			same("after an append", "conv-a", 40)
			if err := e.DeleteMessagesFrom(ctx, "conv-a", ms[len(ms)-1].ID); err != nil {
				t.Fatal(err)
			}
			appendVia(e, "conv-a", "replaced elsewhere")
			if same("after a replace that passed the cache by", "conv-a", 40) {
				t.Error("the cache answered although another process had replaced the last message")
			}
			// Through the cache.
			ms, _ = e.ListMessages(ctx, "conv-a", 40)
			if err := cc.DeleteMessagesFrom(ctx, "conv-a", ms[1].ID); err != nil {
				t.Fatal(err)
			}
			same("after a delete through the cache", "conv-a", 40)

			// A long conversation: the newest TailMessagesMax are kept,
			// longer reads pass through.
			for i := range store.TailMessagesMax + 20 {
				appendVia(cc, "conv-a", fmt.Sprint("long ", i))
			}
			same("a long conversation, filled", "conv-a", store.TailMessagesMax)
			if !same("a long conversation", "conv-a", store.TailMessagesMax) {
				t.Error("the newest TailMessagesMax messages were read from the engine")
			}
			same("a read longer than the cache keeps", "conv-a", store.TailMessagesMax+5)

			// The whole conversation goes another way (an account's
			// deletion): nothing is read from memory.
			if err := e.DeleteConversation(ctx, "conv-a"); err != nil {
				t.Fatal(err)
			}
			same("a conversation deleted elsewhere", "conv-a", 40)

			// Many appends race on one conversation, through the cache
			// and past it, with reads between.
			if _, err := cc.CreateConversation(ctx, store.Conversation{ID: "conv-b", AgentID: "agent-1", OwnerKey: "user:1", CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					s := cc
					if w%4 == 3 {
						s = e
					}
					for i := range 15 {
						if _, err := s.AppendMessage(ctx, store.Message{ConversationID: "conv-b", Role: "user", Text: fmt.Sprint(w, "-", i), CreatedAt: t0}); err != nil {
							t.Error(err)
							return
						}
						if _, err := cc.ListMessages(ctx, "conv-b", 40); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			same("after racing appends", "conv-b", 40)
			same("after racing appends, all", "conv-b", store.TailMessagesMax)
			if hits, misses := c.TailStats(); hits == 0 || misses == 0 {
				t.Errorf("TailStats = %d hits, %d misses; want both", hits, misses)
			}
		})
	}
}

// BenchmarkHistoryRead: a continued turn's history read (the last 40 of a
// conversation's 200 messages) from each engine and through the read
// cache, with a commit of another conversation's message before each
// read, as under a chat load (on SQLite each commit empties the readers'
// page caches). Only the read is timed.
func BenchmarkHistoryRead(b *testing.B) {
	for name, open := range map[string]func(b *testing.B) store.Store{
		"sqlite":   func(b *testing.B) store.Store { return sqlitetest.Open(b) },
		"postgres": func(b *testing.B) store.Store { return pgtest.Open(b) },
	} {
		b.Run(name, func(b *testing.B) { benchmarkHistoryRead(b, open(b)) })
	}
}

func benchmarkHistoryRead(b *testing.B, e store.Store) {
	ctx := b.Context()
	c := store.NewCache(e, time.Hour, 100)
	t0 := time.Now().UTC()
	for _, id := range []string{"conv-read", "conv-other"} {
		if _, err := e.CreateConversation(ctx, store.Conversation{ID: id, AgentID: "agent-1", OwnerKey: "user:1", CreatedAt: t0}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 200 {
		if _, err := e.AppendMessage(ctx, store.Message{ConversationID: "conv-read", Role: "user", Text: fmt.Sprint("message ", i, " of a conversation long enough to read"), CreatedAt: t0}); err != nil {
			b.Fatal(err)
		}
	}
	for name, s := range map[string]store.Conversations{"engine": e, "cached": c.Conversations(e)} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				if _, err := e.AppendMessage(ctx, store.Message{ConversationID: "conv-other", Role: "user", Text: "noise", CreatedAt: t0}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if ms, err := s.ListMessages(ctx, "conv-read", 40); err != nil || len(ms) != 40 {
					b.Fatal(len(ms), err)
				}
			}
		})
	}
}
