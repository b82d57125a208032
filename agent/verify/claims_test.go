package verify_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/verify"
	"github.com/agentsite/agentsite/agent/verify/verifytest"
)

const otherPeer = "12D3KooWSomeoneElseXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"

// clock is a settable test clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newClock() *clock { return &clock{t: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)} }

// A peer's claim is proved by the receiver itself: the domain whose TXT
// names the peer is verified, one whose TXT names another peer, or that
// has none, is not, whatever the signed heartbeat says.
func TestClaimsProveThemselves(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("b.example", "agentsite-verify="+peerID)
	dns.Set("c.example", "agentsite-verify="+otherPeer)
	clk := newClock()
	c := &verify.Claims{LookupTXT: dns.Resolver(), Now: clk.now, SelfID: "self", Self: func() []string { return []string{"self.example"} }}
	c.Claim(peerID, []string{"b.example", "c.example", "none.example"})
	if got := c.Domains(peerID); len(got) != 0 {
		t.Fatalf("verified before any proof ran: %v", got)
	}
	if n := c.CheckQueued(t.Context()); n != 3 {
		t.Fatalf("proofs run = %d, want 3", n)
	}
	if got := c.Domains(peerID); !slices.Equal(got, []string{"b.example"}) {
		t.Fatalf("Domains = %v, want [b.example]; statuses %+v", got, c.Statuses(peerID))
	}
	if got := c.Publishers(); !slices.Equal(got, []string{peerID, "self"}) {
		t.Errorf("Publishers = %v", got)
	}
	if got := c.Domains("self"); !slices.Equal(got, []string{"self.example"}) {
		t.Errorf("own domains = %v", got)
	}
	c.Claim("self", []string{"evil.example"}) // a claim under this node's id from the network: ignored
	if got := c.Domains("self"); !slices.Equal(got, []string{"self.example"}) {
		t.Errorf("own domains after a forged claim = %v", got)
	}
	// Claimed again before Every: nothing is checked again.
	c.Claim(peerID, []string{"b.example", "c.example", "none.example"})
	if n := c.CheckQueued(t.Context()); n != 0 {
		t.Errorf("proofs run again before Every: %d", n)
	}
	// A domain no longer claimed is no longer shown.
	gen := c.Generation()
	c.Claim(peerID, []string{"c.example"})
	if got := c.Domains(peerID); len(got) != 0 || c.Generation() == gen {
		t.Errorf("after dropping b.example: %v (generation %d → %d)", got, gen, c.Generation())
	}
}

// The proofs keep to the minute's budget: the rest waits for the next
// minute, and none is lost.
func TestClaimsBudget(t *testing.T) {
	var looked atomic.Int32
	clk := newClock()
	c := &verify.Claims{PerMinute: 3, Now: clk.now, LookupTXT: func(context.Context, string) ([]string, error) {
		looked.Add(1)
		return nil, nil
	}}
	for i := range 4 {
		p := string(rune('a' + i))
		c.Claim(peerID+p, []string{p + "1.example", p + "2.example"})
	}
	if n := c.CheckQueued(t.Context()); n != 3 || looked.Load() != 3 {
		t.Fatalf("first minute: %d proofs (%d look-ups), want 3", n, looked.Load())
	}
	if n := c.CheckQueued(t.Context()); n != 0 {
		t.Fatalf("same minute again: %d proofs", n)
	}
	for _, want := range []int{3, 2, 0} {
		clk.t = clk.t.Add(time.Minute)
		if n := c.CheckQueued(t.Context()); n != want {
			t.Fatalf("next minute: %d proofs, want %d", n, want)
		}
	}
	if looked.Load() != 8 {
		t.Errorf("look-ups = %d, want 8 (each claim once)", looked.Load())
	}
}

// The queue is bounded: claims past MaxQueue wait for the peer's next
// heartbeat instead of growing it.
func TestClaimsQueueBound(t *testing.T) {
	clk := newClock()
	c := &verify.Claims{MaxQueue: 2, PerMinute: 100, Now: clk.now, LookupTXT: func(context.Context, string) ([]string, error) { return nil, nil }}
	c.Claim(peerID, []string{"a.example", "b.example", "c.example"})
	if n := c.CheckQueued(t.Context()); n != 2 {
		t.Fatalf("proofs = %d, want 2 (the queue's bound)", n)
	}
	c.Claim(peerID, []string{"a.example", "b.example", "c.example"})
	if n := c.CheckQueued(t.Context()); n != 1 {
		t.Fatalf("at the next heartbeat: %d proofs, want the 1 left", n)
	}
}

// The peers remembered are bounded (the least recently heard go first),
// and a peer not heard for Expiry is forgotten.
func TestClaimsBoundAndExpiry(t *testing.T) {
	dns := verifytest.StartDNS(t)
	peers := []string{peerID + "1", peerID + "2", peerID + "3"}
	for i, p := range peers {
		dns.Set(string(rune('a'+i))+".example", "agentsite-verify="+p)
	}
	clk := newClock()
	c := &verify.Claims{MaxPeers: 2, Expiry: 30 * time.Minute, LookupTXT: dns.Resolver(), Now: clk.now}
	c.Claim(peers[0], []string{"a.example"})
	clk.t = clk.t.Add(time.Second)
	c.Claim(peers[1], []string{"b.example"})
	c.CheckQueued(t.Context())
	clk.t = clk.t.Add(time.Second)
	c.Claim(peers[0], []string{"a.example"}) // heard again: peers[1] is now the oldest
	clk.t = clk.t.Add(time.Second)
	c.Claim(peers[2], []string{"c.example"})
	c.CheckQueued(t.Context())
	if c.Peers() != 2 {
		t.Fatalf("peers remembered = %d, want 2", c.Peers())
	}
	if got := c.Domains(peers[1]); len(got) != 0 {
		t.Errorf("the least recently heard peer is still remembered: %v", got)
	}
	if got := c.Domains(peers[0]); !slices.Equal(got, []string{"a.example"}) {
		t.Errorf("peer 0: %v", got)
	}
	if got := c.Domains(peers[2]); !slices.Equal(got, []string{"c.example"}) {
		t.Errorf("peer 2: %v", got)
	}
	clk.t = clk.t.Add(30 * time.Minute) // nobody heard since
	if got := c.Domains(peers[0]); len(got) != 0 {
		t.Errorf("an expired peer's domains: %v", got)
	}
	if got := c.Publishers(); len(got) != 0 {
		t.Errorf("Publishers after expiry: %v", got)
	}
	c.Claim(peers[1], []string{"b.example"}) // the next claim prunes the expired ones
	if c.Peers() != 1 {
		t.Errorf("peers remembered after expiry = %d, want 1", c.Peers())
	}
}

// A verified claim is proved again every Every while its peer claims it;
// three failures in a row unverify it (two do not), and a later success
// verifies it again.
func TestClaimsThreeFailuresUnverify(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("b.example", "agentsite-verify="+peerID)
	clk := newClock()
	c := &verify.Claims{Every: time.Hour, Expiry: 2 * time.Hour, LookupTXT: dns.Resolver(), Now: clk.now}
	c.Claim(peerID, []string{"b.example"})
	c.CheckQueued(t.Context())
	if got := c.Domains(peerID); len(got) != 1 {
		t.Fatalf("not verified: %+v", c.Statuses(peerID))
	}
	dns.Set("b.example") // the record is gone
	for i := 1; i <= 3; i++ {
		clk.t = clk.t.Add(time.Hour)
		c.Claim(peerID, []string{"b.example"})
		if n := c.CheckQueued(t.Context()); n != 1 {
			t.Fatalf("round %d: %d proofs", i, n)
		}
		if got := c.Domains(peerID); (len(got) == 1) != (i < 3) {
			t.Errorf("after failure %d: %v, %+v", i, got, c.Statuses(peerID))
		}
	}
	dns.Set("b.example", "agentsite-verify="+peerID)
	clk.t = clk.t.Add(time.Hour)
	c.Claim(peerID, []string{"b.example"})
	c.CheckQueued(t.Context())
	if got := c.Domains(peerID); len(got) != 1 {
		t.Errorf("verified again: %+v", c.Statuses(peerID))
	}
}

// Run works the queue in the background: a claim is proved without
// anyone calling CheckQueued.
func TestClaimsRun(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("b.example", "agentsite-verify="+peerID)
	c := &verify.Claims{LookupTXT: dns.Resolver()}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	c.Claim(peerID, []string{"b.example"})
	deadline := time.Now().Add(10 * time.Second)
	for len(c.Domains(peerID)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("not proved: %+v", c.Statuses(peerID))
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

// A domain dropped from a peer's claims while its proof waits, then
// claimed again, is proved when claimed again (the skipped proof does not
// leave it marked as queued).
func TestClaimsReclaimed(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("a.example", "agentsite-verify="+peerID)
	clk := newClock()
	c := &verify.Claims{LookupTXT: dns.Resolver(), Now: clk.now}
	c.Claim(peerID, []string{"a.example", "b.example"})
	c.Claim(peerID, []string{"b.example"}) // a.example dropped before its proof ran
	if n := c.CheckQueued(t.Context()); n != 1 {
		t.Fatalf("proofs = %d, want b.example's only", n)
	}
	c.Claim(peerID, []string{"a.example", "b.example"})
	if n := c.CheckQueued(t.Context()); n != 1 {
		t.Fatalf("proofs after claiming a.example again = %d, want 1", n)
	}
	if got := c.Domains(peerID); !slices.Equal(got, []string{"a.example"}) {
		t.Errorf("Domains = %v, want [a.example]", got)
	}
}

// BenchmarkClaimHeard is what a receiver pays per accepted heartbeat of a
// peer whose claims it already holds and proved (nothing due).
func BenchmarkClaimHeard(b *testing.B) {
	c := &verify.Claims{LookupTXT: func(context.Context, string) ([]string, error) { return []string{"agentsite-verify=" + peerID}, nil }}
	domains := []string{"a.example", "b.example"}
	c.Claim(peerID, domains)
	c.CheckQueued(b.Context())
	b.ReportAllocs()
	for b.Loop() {
		c.Claim(peerID, domains)
	}
}
