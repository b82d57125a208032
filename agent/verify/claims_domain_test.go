package verify_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/verify"
	"github.com/agentsite/agentsite/agent/verify/verifytest"
)

// counting wraps a resolver and a fetcher with counters: what the victim
// of a reflector would see.
type counting struct {
	txt, fetch atomic.Int32
}

func (n *counting) resolver(r verify.Resolver) verify.Resolver {
	return func(ctx context.Context, name string) ([]string, error) {
		n.txt.Add(1)
		return r(ctx, name)
	}
}

func (n *counting) fetcher(body string) verify.Fetcher {
	return func(context.Context, string, int64) ([]byte, error) {
		n.fetch.Add(1)
		return []byte(body), nil
	}
}

// However many peers claim a domain, it is looked up once an Every: the
// claims are judged from what that one proof found, each for its own
// peer, and spend no budget.
func TestClaimsOneProofPerDomain(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("victim.example", "agentsite-verify="+peerID)
	var n counting
	clk := newClock()
	c := &verify.Claims{LookupTXT: n.resolver(dns.Resolver()), Fetch: n.fetcher(`{"peer_ids":[]}`), PerMinute: 5, Now: clk.now}
	c.Claim(peerID, []string{"victim.example"})
	for i := range 10 {
		c.Claim(fmt.Sprintf("%s-sybil%d", otherPeer, i), []string{"victim.example"})
	}
	c.CheckQueued(t.Context())
	if n.txt.Load() != 1 || n.fetch.Load() != 1 {
		t.Fatalf("11 claims of one domain: %d TXT look-ups, %d fetches; want 1 and 1", n.txt.Load(), n.fetch.Load())
	}
	if got := c.Domains(peerID); !slices.Equal(got, []string{"victim.example"}) {
		t.Errorf("the named peer: %v, %+v", got, c.Statuses(peerID))
	}
	if got := c.Domains(otherPeer + "-sybil3"); len(got) != 0 {
		t.Errorf("a sybil is verified: %v", got)
	}
	// Claimed afresh by a new peer within Every: judged at once.
	c.Claim(otherPeer+"-late", []string{"victim.example"})
	if ran := c.CheckQueued(t.Context()); ran != 0 || n.txt.Load() != 1 {
		t.Errorf("a late claim within Every: %d proofs, %d look-ups", ran, n.txt.Load())
	}
	if st := c.Statuses(otherPeer + "-late"); len(st) != 1 || st[0].CheckedAt.IsZero() || st[0].Verified {
		t.Errorf("the late claim's status: %+v", st)
	}
	// After Every, the domain is looked up again, once.
	clk.t = clk.t.Add(verify.DefaultEvery)
	c.Claim(peerID, []string{"victim.example"})
	for i := range 10 {
		c.Claim(fmt.Sprintf("%s-sybil%d", otherPeer, i), []string{"victim.example"})
	}
	c.CheckQueued(t.Context())
	if n.txt.Load() != 2 {
		t.Errorf("after Every: %d look-ups, want 2", n.txt.Load())
	}
}

// A claim dropped and claimed again keeps its verdict: it is not proved
// again before Every, and shows as verified again at once.
func TestClaimsToggledKeepVerdict(t *testing.T) {
	dns := verifytest.StartDNS(t)
	dns.Set("b.example", "agentsite-verify="+peerID)
	var n counting
	clk := newClock()
	c := &verify.Claims{LookupTXT: n.resolver(dns.Resolver()), Now: clk.now}
	c.Claim(peerID, []string{"b.example"})
	c.CheckQueued(t.Context())
	for i := range 5 {
		clk.t = clk.t.Add(time.Minute)
		c.Claim(peerID, nil)
		if got := c.Domains(peerID); len(got) != 0 {
			t.Fatalf("toggle %d: a dropped claim is shown: %v", i, got)
		}
		c.Claim(peerID, []string{"b.example"})
		if got := c.Domains(peerID); !slices.Equal(got, []string{"b.example"}) {
			t.Errorf("toggle %d: claimed again, %v (%+v)", i, got, c.Statuses(peerID))
		}
		c.CheckQueued(t.Context())
	}
	if n.txt.Load() != 1 {
		t.Errorf("5 toggles: %d look-ups, want 1", n.txt.Load())
	}
}

// An IP literal is not a domain: refused where a claim is read, and never
// looked up nor fetched.
func TestClaimsRefuseIPLiterals(t *testing.T) {
	ips := []string{"127.0.0.1", "169.254.169.254", "10.0.0.1", "127.1", "2130706433.x.0x7f", "1.2.3.4."}
	for _, d := range ips {
		if n, err := agent.NormalizeDomain(d); err == nil {
			t.Errorf("NormalizeDomain(%q) = %q, want refused", d, n)
		}
		if agent.CheckHeartbeatDomains([]string{d}) == nil {
			t.Errorf("a heartbeat claiming %q is accepted", d)
		}
	}
	for _, d := range []string{"example.org", "a1.example", "xn--bcher-kva.example", "123.example.org"} {
		if _, err := agent.NormalizeDomain(d); err != nil {
			t.Errorf("NormalizeDomain(%q) = %v", d, err)
		}
	}
	dns := verifytest.StartDNS(t)
	var n counting
	c := &verify.Claims{LookupTXT: n.resolver(dns.Resolver()), Fetch: n.fetcher(`{"peer_ids":["` + peerID + `"]}`)}
	c.Claim(peerID, ips)
	c.CheckQueued(t.Context())
	if n.txt.Load() != 0 || n.fetch.Load() != 0 || len(c.Domains(peerID)) != 0 {
		t.Errorf("IP literals claimed: %d look-ups, %d fetches, verified %v", n.txt.Load(), n.fetch.Load(), c.Domains(peerID))
	}
}
