package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// usesCases: the week's conversations a host reports (agent.Health.Uses7d),
// stored with the health and sorted by (store.SortUsed).
var usesCases = []testCase{
	{"SortByUses", testSortByUses},
	{"ConversationsSince", testConversationsSince},
}

// testSortByUses: SortUsed walks every listing once, the most used first,
// equal uses and the unused newest first, failing agents last; the uses
// are stored with the health and read back, and a change of uses alone
// is a write.
func testSortByUses(t *testing.T, s store.Store) {
	at := now()
	p := newPublisher(t)
	var ls []store.Listing
	for i := range 6 {
		ls = append(ls, p.listing(t, at, agent.Record{Name: fmt.Sprintf("use-%d", i), Description: "common words", Tags: []string{"t"}}))
	}
	mustUpsert(t, s, ls...)
	mustUpsert(t, s, newPublisher(t).listing(t, at, agent.Record{Name: "other", Description: "other"}))
	ok := health(agent.HealthHealthy, at)
	uses := func(n int) agent.Health { h := ok; h.Uses7d = n; return h }
	failing := health(agent.HealthFailing, at)
	failing.Uses7d = 30
	id := func(i int) string { return ls[i].Record.ID }
	mustSetHealth(t, s, p.peer, map[string]agent.Health{
		id(0): uses(5), id(1): uses(12), id(2): uses(5), id(3): ok, id(4): ok, id(5): failing,
	})
	if got := mustGet(t, s, id(1)).Health.Uses7d; got != 12 {
		t.Fatalf("u1's uses after SetHealth = %d, want 12", got)
	}
	want := []string{"use-1", "use-2", "use-0", "use-4", "use-3", "use-5"}
	for _, limit := range []int{1, 2, 3, 5, 6, 7} {
		for _, q := range []store.SearchQuery{
			{Sort: store.SortUsed, Q: "common", Limit: limit},
			{Sort: store.SortUsed, Tags: []string{"t"}, Limit: limit},
			{Sort: store.SortUsed, Tags: []string{"t"}, Limit: limit, PublicOnly: true},
		} {
			if got := walk(t, s, q, nil); !slices.Equal(got, want) {
				t.Errorf("%+v: walked %q, want %q", q, got, want)
			}
		}
	}
	if got := walk(t, s, store.SearchQuery{Sort: store.SortUsed, Limit: 2}, nil); len(got) != 7 || got[0] != "use-1" || got[3] != "other" {
		t.Errorf("by uses without filters: %q, want u1 first and other (unused, newest) before u4", got)
	}
	// The same report writes nothing; uses alone changing is a write, and
	// back to none the agent is among the unused again.
	if n := mustSetHealth(t, s, p.peer, map[string]agent.Health{id(1): uses(12)}); n != 0 {
		t.Errorf("unchanged uses: %d rows written, want 0", n)
	}
	if n := mustSetHealth(t, s, p.peer, map[string]agent.Health{id(1): ok, id(3): uses(7)}); n == 0 {
		t.Errorf("changed uses: no row written")
	}
	if got := mustGet(t, s, id(1)).Health.Uses7d; got != 0 {
		t.Errorf("u1's uses after a report without them = %d, want 0", got)
	}
	want = []string{"use-3", "use-2", "use-0", "use-4", "use-1", "use-5"}
	if got := walk(t, s, store.SearchQuery{Sort: store.SortUsed, Tags: []string{"t"}, Limit: 2}, nil); !slices.Equal(got, want) {
		t.Errorf("after the change: walked %q, want %q", got, want)
	}
	// A host's claim about another host's agent changes nothing.
	other := newPublisher(t)
	if n := mustSetHealth(t, s, other.peer, map[string]agent.Health{id(4): uses(99)}); n != 0 || mustGet(t, s, id(4)).Health.Uses7d != 0 {
		t.Errorf("another host's uses for u4 were stored (%d rows)", n)
	}
}

// conversationCounter is what the engines offer the host's heartbeats.
type conversationCounter interface {
	ConversationsSince(ctx context.Context, since time.Time) (map[string]int, error)
}

// testConversationsSince: per hosted agent, the conversations with a
// message since the time; an empty one, an old one and another node's
// agent do not count.
func testConversationsSince(t *testing.T, s store.Store) {
	c, ok := s.(conversationCounter)
	if !ok {
		t.Skip("not an engine")
	}
	ctx := testContext(t)
	at := now()
	p := newPublisher(t)
	a, b := p.listing(t, at, agent.Record{Name: "used-a"}), p.listing(t, at, agent.Record{Name: "used-b"})
	a.Local, b.Local = true, true
	remote := newPublisher(t).listing(t, at, agent.Record{Name: "remote"})
	mustUpsert(t, s, a, b, remote)
	week := at.Add(-7 * 24 * time.Hour)
	conv := func(id, agentID string, msgAt time.Time, msgs int) {
		t.Helper()
		if _, err := s.CreateConversation(ctx, store.Conversation{ID: id, AgentID: agentID, OwnerKey: "user:1", CreatedAt: msgAt}); err != nil {
			t.Fatal(err)
		}
		for range msgs {
			if _, err := s.AppendMessage(ctx, store.Message{ConversationID: id, Role: "user", Text: "hi", CreatedAt: msgAt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	conv("c1", a.Record.ID, at.Add(-time.Hour), 3)
	conv("c2", a.Record.ID, at.Add(-48*time.Hour), 1)
	conv("c3", a.Record.ID, at.Add(-time.Hour), 0)        // no turn
	conv("c4", a.Record.ID, week.Add(-time.Hour), 2)      // before the week
	conv("c5", b.Record.ID, at.Add(-time.Minute), 1)      // the other agent
	conv("c6", remote.Record.ID, at.Add(-time.Minute), 1) // not hosted here
	got, err := c.ConversationsSince(ctx, week)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{a.Record.ID: 2, b.Record.ID: 1}
	if len(got) != len(want) || got[a.Record.ID] != 2 || got[b.Record.ID] != 1 {
		t.Errorf("ConversationsSince = %v, want %v", got, want)
	}
}
