package mcpserver

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// TestSubscriptionBounds: a session watches at most perSession resources
// and the node at most max; a refusal says which bound; unsubscribing
// and the session's end give the room back.
func TestSubscriptionBounds(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	subs := newSubscriptions(2, 3, time.Second, clock.Now)
	for _, uri := range []string{"u1", "u2", "u2"} {
		if err := subs.add("a", uri, "fp"); err != nil {
			t.Fatalf("add %s: %v", uri, err)
		}
	}
	if err := subs.add("a", "u3", "fp"); !errors.Is(err, errSessionSubscriptions) {
		t.Errorf("a third resource for one session: %v, want %v", err, errSessionSubscriptions)
	}
	if err := subs.add("b", "u1", "fp"); err != nil {
		t.Fatal(err)
	}
	if err := subs.add("c", "u1", "fp"); !errors.Is(err, errNodeSubscriptions) {
		t.Errorf("a fourth subscription on the node: %v, want %v", err, errNodeSubscriptions)
	}
	if n := subs.count(); n != 3 {
		t.Errorf("count %d, want 3", n)
	}
	subs.remove("a", "u1")
	subs.remove("a", "never")
	if err := subs.add("c", "u1", "fp"); err != nil {
		t.Errorf("after an unsubscribe: %v", err)
	}
	subs.end("a")
	subs.end("c")
	if n := subs.count(); n != 1 {
		t.Errorf("after two sessions ended: count %d, want 1", n)
	}
}

// TestSubscriptionPoll: a session's resources are due again only once
// the poll interval has passed, with what was last seen of each.
func TestSubscriptionPoll(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	subs := newSubscriptions(4, 10, time.Minute, clock.Now)
	if err := subs.add("a", "u1", "v1"); err != nil {
		t.Fatal(err)
	}
	if got := subs.due("a"); got != nil {
		t.Errorf("due before the interval: %v", got)
	}
	clock.Add(time.Minute)
	if got := subs.due("a"); got["u1"] != "v1" || len(got) != 1 {
		t.Errorf("due after the interval: %v, want u1=v1", got)
	}
	if got := subs.due("a"); got != nil {
		t.Errorf("due twice in one interval: %v", got)
	}
	subs.seenNow("a", "u1", "v2")
	subs.seenNow("a", "gone", "v2") // not watched: ignored
	clock.Add(time.Minute)
	if got := subs.due("a"); got["u1"] != "v2" || len(got) != 1 {
		t.Errorf("due after a change: %v, want u1=v2", got)
	}
	if subs.due("nobody") != nil {
		t.Error("a session with no subscriptions is due")
	}
}

// TestSubscriptionsEndWithSession: when a session is evicted (or
// expires), its subscriptions are dropped with it.
func TestSubscriptionsEndWithSession(t *testing.T) {
	g := bareGuard(Limits{MaxSessions: 1})
	w := initSession(g, "192.0.2.1:1")
	first := w.Header().Get("Mcp-Session-Id")
	if first == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if err := g.subs.add(first, "agentsite://agents/x", "fp"); err != nil {
		t.Fatal(err)
	}
	initSession(g, "192.0.2.2:1") // evicts the first session
	if n := g.subs.count(); n != 0 {
		t.Errorf("%d subscriptions held after their session was evicted, want 0", n)
	}
}

// TestListenHoldsNoStream: a sessionless subscriptions/listen asking for
// resources is answered without them (the node holds no long streams);
// the rest of the message is kept.
func TestListenHoldsNoStream(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["agentsite://agents/x"]},"_meta":{"k":"v"}}}`
	out := string(withoutListenedResources([]byte(in)))
	if strings.Contains(out, "resourceSubscriptions") || !strings.Contains(out, `"toolsListChanged":true`) || !strings.Contains(out, `"_meta":{"k":"v"}`) || !strings.Contains(out, `"id":7`) {
		t.Errorf("rewritten listen %s", out)
	}
	escaped := `{"jsonrpc":"2.0","id":7,"method":"subscriptions\/listen","params":{"notifications":{"\u0072esourceSubscriptions":["agentsite://agents/x"]}}}`
	if out := string(withoutListenedResources([]byte(escaped))); strings.Contains(out, "agentsite://agents/x") {
		t.Errorf("a key spelled with escapes was kept: %s", out)
	}
	other := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if got := string(withoutListenedResources([]byte(other))); got != other {
		t.Errorf("another method was changed: %s", got)
	}
}
