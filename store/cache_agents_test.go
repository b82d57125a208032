package store

import (
	"testing"
	"time"
)

// TestAgentLRUBounded: a flood of distinct ids (a turn can name any)
// keeps at most max listings, the least recently used going first.
func TestAgentLRUBounded(t *testing.T) {
	a := newIDLRU[Listing](3, time.Hour, nil)
	now := time.Now()
	for _, id := range []string{"a", "b", "c"} {
		a.put(id, Listing{}, 1, 1, now)
	}
	if _, ok := a.get("a", 1, 1, now); !ok {
		t.Fatal("a not served")
	}
	a.put("d", Listing{}, 1, 1, now)
	if a.order.Len() != 3 || len(a.byID) != 3 {
		t.Fatalf("holds %d (%d ids), want 3", a.order.Len(), len(a.byID))
	}
	if _, ok := a.get("b", 1, 1, now); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	if _, ok := a.get("a", 2, 1, now); ok {
		t.Fatal("a served after a write (generation moved)")
	}
	if _, ok := a.get("c", 1, 2, now); ok {
		t.Fatal("c served after the change feed moved")
	}
	if _, ok := a.get("d", 1, 1, now.Add(time.Hour)); ok {
		t.Fatal("d served past its TTL")
	}
}
