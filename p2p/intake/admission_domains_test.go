package intake

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// TestAdmissionTrustDomains: with --trust-domain example.org, a publisher
// this node proved controls example.org is trusted as a --trust-peer one
// is (no gossip rate, no never-heard quota, admitted under TrustedOnly),
// for as long as the proof holds; a publisher that proved another domain,
// or none, is not.
func TestAdmissionTrustDomains(t *testing.T) {
	now := time.Now()
	proved, other, stranger, relayer := testPeer(t), testPeer(t), testPeer(t), testPeer(t)
	var mu sync.Mutex
	verified := map[string][]string{proved.String(): {"example.org"}, other.String(): {"other.example"}}
	a := newAdmission(Admission{TrustedOnly: true, TrustDomains: []string{"example.org"}, PublisherPerMinute: 2,
		UnheardPerHour: 1, UnheardPublishersPerHour: 1,
		Verified: func(p string) []string { mu.Lock(); defer mu.Unlock(); return verified[p] }})
	for i := range 5 {
		if err := a.check(&agent.Record{Publisher: proved.String()}, relayer, "", "self", now); err != nil {
			t.Fatalf("listing %d of a publisher proved for a trusted domain: %v", i, err)
		}
		if _, pubOK := a.allowGossip(relayer, proved.String(), now); !pubOK {
			t.Fatalf("gossip %d of a publisher proved for a trusted domain was rate limited", i)
		}
	}
	for _, p := range []string{other.String(), stranger.String()} {
		if err := a.check(&agent.Record{Publisher: p}, relayer, "", "self", now); !errors.Is(err, ErrUntrusted) {
			t.Errorf("publisher %s (domains %v) under TrustedOnly: %v, want untrusted", p, verified[p], err)
		}
	}
	mu.Lock()
	delete(verified, proved.String()) // the proof failed for good
	mu.Unlock()
	if err := a.check(&agent.Record{Publisher: proved.String()}, relayer, "", "self", now); !errors.Is(err, ErrUntrusted) {
		t.Errorf("after its proof failed: %v, want untrusted", err)
	}
	// Without a Verified source, TrustDomains trusts nobody.
	b := newAdmission(Admission{TrustedOnly: true, TrustDomains: []string{"example.org"}})
	if err := b.check(&agent.Record{Publisher: proved.String()}, relayer, "", "self", now); !errors.Is(err, ErrUntrusted) {
		t.Errorf("no Verified source: %v", err)
	}
}
