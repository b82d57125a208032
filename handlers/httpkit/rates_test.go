package httpkit

import (
	"testing"
	"time"
)

// A message's delegated turns draw from the chat budget its sender was
// admitted with: the turns this node runs one by one (Allow), those
// another node ran after the fact (Charge, into debt), so the sender's
// next message waits for them.
func TestQuotaDrawsFromTheChatBudget(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	rates := NewRates(60) // 1 a second, burst 10
	q := rates.Quota(clock, "user:1", "ip:192.0.2.1")

	if !rates.Allow("ip:192.0.2.1", now) { // the message itself, as a surface admits it
		t.Fatal("the first message was refused")
	}
	for i := range 9 {
		if !q.Allow() {
			t.Fatalf("delegated turn %d refused within the burst", i)
		}
	}
	if q.Allow() {
		t.Fatal("a delegated turn beyond the sender's budget was allowed")
	}
	if rates.Allow("ip:192.0.2.1", now) {
		t.Fatal("the sender's next message was allowed with its budget spent on delegated turns")
	}

	// Ten seconds later the budget is back; another node's 15 turns
	// spend it again, and 5 more are owed.
	now = now.Add(10 * time.Second)
	q.Charge(15)
	if rates.Allow("user:1", now) || rates.Allow("ip:192.0.2.1", now) {
		t.Fatal("turns another node ran were not charged")
	}
	now = now.Add(5 * time.Second) // 5 tokens back, all owed
	if rates.Allow("ip:192.0.2.1", now) {
		t.Fatal("the debt was not kept")
	}
	now = now.Add(2 * time.Second)
	if !rates.Allow("ip:192.0.2.1", now) {
		t.Fatal("the budget did not come back once the debt was paid")
	}
	// Another client's budget is its own.
	if !rates.Allow("ip:192.0.2.2", now) {
		t.Fatal("another client was refused")
	}
}
