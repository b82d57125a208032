package heartbeat

import (
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// TestIntervalFollowsThePlanet: the interval is the nodes heard over the
// budget, within the base and agent.MaxHeartbeatInterval, and the base
// while an older node is heard.
func TestIntervalFollowsThePlanet(t *testing.T) {
	n := New(Config{Interval: 10 * time.Second, Budget: 1})
	now := time.Now()
	hear := func(k int) { // nodes heard for longer than settledAfter
		for range k {
			_, p := genKey(t)
			for _, at := range []time.Time{now.Add(-settledAfter - time.Minute), now} {
				n.hb.rounds().allowDeclared(p.String(), at, at, time.Second, 10*time.Second)
			}
		}
	}
	if got := n.heartbeatInterval(now); got != 10*time.Second {
		t.Errorf("alone: %v, want the base 10s", got)
	}
	hear(49)
	if got := n.heartbeatInterval(now); got != 50*time.Second {
		t.Errorf("50 nodes at 1/s: %v, want 50s", got)
	}
	if got := n.heartbeatInterval(now.Add(countedFor)); got != 10*time.Second {
		t.Errorf("the nodes not heard for %v do not count: %v, want 10s", countedFor, got)
	}
	hear(1000)
	if got := n.heartbeatInterval(now); got != agent.MaxHeartbeatInterval {
		t.Errorf("1,050 nodes at 1/s: %v, want the cap %v", got, agent.MaxHeartbeatInterval)
	}
	if n.publishV1() {
		t.Error("a node that heard no older node publishes on status/1")
	}
	n.oldNodeHeard(now)
	if !n.publishV1() {
		t.Error("a node that heard an older node does not publish on status/1")
	}
	if got := n.heartbeatInterval(now); got != 10*time.Second {
		t.Errorf("with an older node heard: %v, want the base", got)
	}
}

// TestRoundsFollowTheDeclaredInterval: a status/2 round sooner than half
// the interval its sender declared is dropped but is no flood (a sender
// that restarted, or whose planet shrank, starts from a shorter one);
// rounds under the floor gap are a flood as before.
func TestRoundsFollowTheDeclaredInterval(t *testing.T) {
	b := newBeats()
	t0 := time.Now()
	const floor = 500 * time.Millisecond
	declared := 50 * time.Second
	if v := b.allowDeclared("p", t0, t0, floor, declared); v != beatOK {
		t.Fatalf("first round: %v", v)
	}
	for i := 1; i <= 5; i++ {
		at := t0.Add(time.Duration(i) * 4 * time.Second)
		if v := b.allowDeclared("p", at, at, floor, 10*time.Second); v != beatLate {
			t.Fatalf("round %d, %v after one that declared %v: %v, want dropped unpunished", i, at.Sub(t0), declared, v)
		}
	}
	at := t0.Add(declared / 2)
	if v := b.allowDeclared("p", at, at, floor, 10*time.Second); v != beatOK {
		t.Fatalf("a round half the declared interval later: %v", v)
	}
	for i := 1; i <= floodAfter+1; i++ {
		soon := at.Add(time.Duration(i) * time.Millisecond)
		v := b.allowDeclared("p", soon, soon, floor, 10*time.Second)
		if want := beatLate; i > floodAfter {
			if v != beatFlood {
				t.Fatalf("too-soon round %d: %v, want a flood", i, v)
			}
		} else if v != want {
			t.Fatalf("too-soon round %d: %v, want dropped", i, v)
		}
	}
}
