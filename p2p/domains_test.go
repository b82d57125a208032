package p2p

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// claimsSeen records what Config.Claims is handed.
type claimsSeen struct {
	mu   sync.Mutex
	last map[string][]string
}

func (c *claimsSeen) Claim(peerID string, domains []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last[peerID] = domains
}

func (c *claimsSeen) Due(_ string, domains []string) []string { return domains }

func (c *claimsSeen) get(peerID string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.last[peerID]
	return d, ok
}

// TestHeartbeatCarriesDomains: a node's Domains ride in its signed
// heartbeats, every round, and the receiver hands them to its Claims;
// when the sender's set changes, the next round says so.
func TestHeartbeatCarriesDomains(t *testing.T) {
	var (
		mu   sync.Mutex
		mine = []string{"b.example"}
	)
	b := startNode(t, nil, Config{Cache: &hostCache{}, HeartbeatInterval: 100 * time.Millisecond, NoSyncOnConnect: true,
		Domains: func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(mine) }})
	seen := &claimsSeen{last: map[string][]string{}}
	a := startNode(t, nil, Config{Cache: &hostCache{}, HeartbeatInterval: 100 * time.Millisecond, NoSyncOnConnect: true, Claims: seen})
	connect(t, a, b)
	waitfor.Until(t, 30*time.Second, "B's domains at A", func() bool {
		d, _ := seen.get(b.PeerID())
		return slices.Equal(d, []string{"b.example"})
	})
	mu.Lock()
	mine = nil
	mu.Unlock()
	waitfor.Until(t, 30*time.Second, "B's empty set at A", func() bool {
		d, ok := seen.get(b.PeerID())
		return ok && len(d) == 0
	})
}

// claimsDue is a DomainClaims whose Due is what the peer did not claim
// before (what a real Claims would prove).
type claimsDue struct{ claimsSeen }

func (c *claimsDue) Due(peerID string, domains []string) []string {
	prev, _ := c.get(peerID)
	var out []string
	for _, d := range domains {
		if !slices.Contains(prev, d) {
			out = append(out, d)
		}
	}
	return out
}

// The domains a heartbeat brings that would cost a proof are charged to
// the introduction allowance of the peer it came from: past it, the
// round's claims are not handed on (the earlier ones stand).
func TestClaimsChargedToForwarder(t *testing.T) {
	var (
		mu   sync.Mutex
		mine = []string{"a.example", "b.example"}
	)
	b := startNode(t, nil, Config{Cache: &hostCache{}, HeartbeatInterval: 100 * time.Millisecond, NoSyncOnConnect: true,
		Domains: func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(mine) }})
	seen := &claimsDue{claimsSeen{last: map[string][]string{}}}
	a := startNode(t, nil, Config{Cache: &hostCache{}, HeartbeatInterval: 100 * time.Millisecond, NoSyncOnConnect: true,
		Claims: seen, Admission: Admission{IntroducedPerHour: 3, IPGroupFactor: 1}})
	connect(t, a, b)
	waitfor.Until(t, 30*time.Second, "B's first claims at A", func() bool {
		d, _ := seen.get(b.PeerID())
		return slices.Equal(d, mine)
	})
	mu.Lock()
	mine = []string{"c.example", "d.example"} // two more to prove: 4 > 3
	mu.Unlock()
	waitfor.Until(t, 30*time.Second, "A to refuse B's new claims", func() bool {
		return a.AdmissionPenalty(b.host.ID()) > 0
	})
	if d, _ := seen.get(b.PeerID()); !slices.Equal(d, []string{"a.example", "b.example"}) {
		t.Errorf("claims handed on past the allowance: %v", d)
	}
}
