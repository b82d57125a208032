package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

var memoryCases = []testCase{
	{"Memories", testMemories},
	{"MemoryBounds", testMemoryBounds},
}

// testMemories: facts are kept per person and agent, listed newest first
// with their times, deleted one at a time (only by their person) or all
// at once per agent or for every agent, and they go with the account.
func testMemories(t *testing.T, s store.Store) {
	ctx := testContext(t)
	alice, err := s.CreateUser(ctx, "mem-alice", "h")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.CreateUser(ctx, "mem-bob", "h")
	if err != nil {
		t.Fatal(err)
	}
	t0 := now().Add(-time.Hour)
	add := func(user int64, agentID, fact string, i int) store.Memory {
		t.Helper()
		m, forgot, err := s.AddMemory(ctx, store.Memory{UserID: user, AgentID: agentID, Fact: fact, CreatedAt: t0.Add(time.Duration(i) * time.Minute)})
		if err != nil || forgot != 0 || m.ID == 0 {
			t.Fatalf("AddMemory(%d, %s, %q) = %+v, %d, %v", user, agentID, fact, m, forgot, err)
		}
		return m
	}
	first := add(alice.ID, "agent-a", "likes tea", 0)
	add(alice.ID, "agent-a", "lives in Lyon", 1)
	add(alice.ID, "agent-b", "plays chess", 2)
	add(bob.ID, "agent-a", "likes coffee", 3)
	last := add(alice.ID, "agent-a", "has a cat named Tom ✓", 4)

	facts := func(user int64, agentID string, limit int) []string {
		t.Helper()
		ms, err := s.ListMemories(ctx, user, agentID, limit)
		if err != nil {
			t.Fatalf("ListMemories(%d, %q): %v", user, agentID, err)
		}
		out := []string{}
		for _, m := range ms {
			if m.UserID != user || (agentID != "" && m.AgentID != agentID) {
				t.Errorf("ListMemories(%d, %q) returned %+v", user, agentID, m)
			}
			out = append(out, m.AgentID+":"+m.Fact)
		}
		return out
	}
	for _, tc := range []struct {
		user    int64
		agentID string
		limit   int
		want    []string
	}{
		{alice.ID, "agent-a", 0, []string{"agent-a:has a cat named Tom ✓", "agent-a:lives in Lyon", "agent-a:likes tea"}},
		{alice.ID, "agent-a", 2, []string{"agent-a:has a cat named Tom ✓", "agent-a:lives in Lyon"}},
		{alice.ID, "", 0, []string{"agent-a:has a cat named Tom ✓", "agent-b:plays chess", "agent-a:lives in Lyon", "agent-a:likes tea"}},
		{bob.ID, "agent-a", 0, []string{"agent-a:likes coffee"}},
		{bob.ID, "agent-b", 0, []string{}},
	} {
		if got := facts(tc.user, tc.agentID, tc.limit); !slices.Equal(got, tc.want) {
			t.Errorf("ListMemories(%d, %q, %d) = %q, want %q", tc.user, tc.agentID, tc.limit, got, tc.want)
		}
	}
	ms, err := s.ListMemories(ctx, alice.ID, "agent-a", 1)
	if err != nil || len(ms) != 1 || ms[0].ID != last.ID || !ms[0].CreatedAt.Equal(last.CreatedAt) || ms[0].CreatedAt != last.CreatedAt.UTC() {
		t.Errorf("the newest fact read back = %+v, %v; stored %+v", ms, err, last)
	}

	// A person that does not exist has no memory to add to.
	if _, _, err := s.AddMemory(ctx, store.Memory{UserID: bob.ID + 1000, AgentID: "agent-a", Fact: "x"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AddMemory of a missing user = %v, want ErrNotFound", err)
	}
	// A fact over the bound is refused.
	if _, _, err := s.AddMemory(ctx, store.Memory{UserID: alice.ID, AgentID: "agent-a", Fact: strings.Repeat("x", store.MaxMemoryFactBytes+1)}); err == nil {
		t.Error("a fact over MaxMemoryFactBytes was stored")
	}

	// One fact, by its person only.
	if err := s.DeleteMemory(ctx, bob.ID, first.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob deleting alice's fact = %v, want ErrNotFound", err)
	}
	if err := s.DeleteMemory(ctx, alice.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMemory(ctx, alice.ID, first.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting a fact again = %v, want ErrNotFound", err)
	}
	if got := facts(alice.ID, "agent-a", 0); !slices.Equal(got, []string{"agent-a:has a cat named Tom ✓", "agent-a:lives in Lyon"}) {
		t.Errorf("after deleting one: %q", got)
	}
	// All with one agent, then all.
	if n, err := s.DeleteMemories(ctx, alice.ID, "agent-a"); err != nil || n != 2 {
		t.Errorf("DeleteMemories(alice, agent-a) = %d, %v, want 2", n, err)
	}
	if got := facts(alice.ID, "", 0); !slices.Equal(got, []string{"agent-b:plays chess"}) {
		t.Errorf("after deleting agent-a's: %q", got)
	}
	add(alice.ID, "agent-c", "speaks French", 5)
	if n, err := s.DeleteMemories(ctx, alice.ID, ""); err != nil || n != 2 {
		t.Errorf("DeleteMemories(alice, all) = %d, %v, want 2", n, err)
	}
	if got := facts(bob.ID, "", 0); !slices.Equal(got, []string{"agent-a:likes coffee"}) {
		t.Errorf("bob's facts after alice's deletions: %q", got)
	}
	// The account's deletion takes its facts.
	if err := s.DeleteUser(ctx, bob.ID, "user:"+fmt.Sprint(bob.ID), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got := facts(bob.ID, "", 0); len(got) != 0 {
		t.Errorf("a deleted account's facts stay: %q", got)
	}
}

// testMemoryBounds: past MaxMemoriesPerAgent facts, or
// MaxMemoryBytesPerAgent bytes, the oldest of that person and agent are
// forgotten as a new one is added; another agent's are not.
func testMemoryBounds(t *testing.T, s store.Store) {
	ctx := testContext(t)
	u, err := s.CreateUser(ctx, "mem-bounds", "h")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AddMemory(ctx, store.Memory{UserID: u.ID, AgentID: "other", Fact: "kept"}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for i := range store.MaxMemoriesPerAgent + 2 {
		_, forgot, err := s.AddMemory(ctx, store.Memory{UserID: u.ID, AgentID: "counted", Fact: fmt.Sprintf("fact %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		total += forgot
	}
	ms, err := s.ListMemories(ctx, u.ID, "counted", 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 2 || len(ms) != store.MaxMemoriesPerAgent || ms[0].Fact != fmt.Sprintf("fact %d", store.MaxMemoriesPerAgent+1) || ms[len(ms)-1].Fact != "fact 2" {
		t.Errorf("after %d facts: %d forgotten, %d kept (newest %q, oldest %q)", store.MaxMemoriesPerAgent+2, total, len(ms), ms[0].Fact, ms[len(ms)-1].Fact)
	}

	// Bytes: facts of the largest size, counted in bytes (é is two).
	big := strings.Repeat("é", store.MaxMemoryFactBytes/2)
	fit := store.MaxMemoryBytesPerAgent / store.MaxMemoryFactBytes
	total = 0
	for i := range fit + 1 {
		_, forgot, err := s.AddMemory(ctx, store.Memory{UserID: u.ID, AgentID: "sized", Fact: big[:len(big)-4] + fmt.Sprintf("%04d", i)})
		if err != nil {
			t.Fatal(err)
		}
		total += forgot
	}
	ms, err = s.ListMemories(ctx, u.ID, "sized", 0)
	if err != nil {
		t.Fatal(err)
	}
	if total != 1 || len(ms) != fit || !strings.HasSuffix(ms[len(ms)-1].Fact, "0001") {
		t.Errorf("after %d facts of %d bytes: %d forgotten, %d kept", fit+1, len(big), total, len(ms))
	}
	if other, err := s.ListMemories(ctx, u.ID, "other", 0); err != nil || len(other) != 1 {
		t.Errorf("another agent's facts: %+v, %v", other, err)
	}
}
