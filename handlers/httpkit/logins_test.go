package httpkit

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestLoginLimits: an account's budget is spent in any case of its
// handle, says how long until the next attempt and fills up again; a
// filled-up bucket is forgotten; the map never passes its bound, however
// many handles are tried, and handles longer than any real one share one
// budget.
func TestLoginLimits(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := NewLoginLimits(3, 10)
	for _, h := range []string{"alice", " Alice", "ALICE"} {
		if ok, _ := l.Allow(h, now); !ok {
			t.Fatalf("attempt as %q refused within the budget", h)
		}
	}
	ok, wait := l.Allow("alice", now)
	if ok || wait != 20*time.Second {
		t.Fatalf("fourth attempt = %v, wait %v; want refused, 20s", ok, wait)
	}
	if got := TryAgainIn(wait); got != "in 20 seconds" {
		t.Errorf("TryAgainIn(20s) = %q", got)
	}
	if ok, _ := l.Allow("bob", now); !ok {
		t.Error("another account is held by alice's budget")
	}
	if ok, _ := l.Allow("alice", now.Add(20*time.Second)); !ok {
		t.Error("alice refused once a token came back")
	}

	// A minute later every bucket is full again: the sweep forgets them.
	later := now.Add(2 * time.Minute)
	l.Allow("carol", later)
	if n := l.Len(); n != 1 {
		t.Errorf("after a quiet minute the limits hold %d accounts, want 1 (carol)", n)
	}

	// A spray of handles keeps the map at its bound.
	for i := range 1000 {
		l.Allow(fmt.Sprintf("spray-%d", i), later)
		if n := l.Len(); n > 10 {
			t.Fatalf("the limits hold %d accounts, bound 10", n)
		}
	}

	// Handles longer than any real one share a budget.
	long := NewLoginLimits(1, 10)
	long.Allow(strings.Repeat("a", 100), now)
	if ok, _ := long.Allow(strings.Repeat("b", 200), now); ok {
		t.Error("over-long handles each got a budget of their own")
	}
	if n := long.Len(); n != 1 {
		t.Errorf("over-long handles take %d buckets, want 1", n)
	}
}
