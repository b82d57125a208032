package verify

import (
	"container/list"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Claims.
const (
	// DefaultPerMinute is how many proofs (one domain of one peer, DNS
	// then HTTPS) a node checks a minute for other nodes' claims.
	DefaultPerMinute = 60
	// DefaultMaxPeers bounds the peers whose claims a node remembers.
	DefaultMaxPeers = 4096
	// DefaultMaxQueue bounds the proofs waiting for the budget; a claim
	// that finds the queue full waits for its peer's next heartbeat.
	DefaultMaxQueue = 1024
	// DefaultExpiry is how long a peer's claims (and their verdicts) are
	// kept after its last heartbeat: three of the longest heartbeat
	// intervals (agent.MaxHeartbeatInterval), so a live peer never loses
	// them and a gone one does.
	DefaultExpiry = 30 * time.Minute
	// DefaultWorkers is how many proofs run at once.
	DefaultWorkers = 2
)

// Claims proves the domains other nodes claim in their heartbeats, with the
// same proofs a node uses for its own (a TXT record naming the claimant's
// peer id, or its HTTPS well-known document listing it): a signed claim
// is only a claim, and anyone could claim google.com. Each (peer, domain)
// is checked when claimed and again every Every while its peer keeps
// claiming it; MaxFailures failures in a row unverify it. What a peer
// can make a node hold is bounded: MaxDomains a peer, MaxPeers peers
// (least recently heard forgotten first), Expiry after the last
// heartbeat, MaxQueue proofs waiting, PerMinute proofs a minute.
//
// Domains(peer) answers with the verified ones: for this node's own peer
// id, Self's. It satisfies handlers/ard's Publishers and p2p's
// DomainClaims.
type Claims struct {
	LookupTXT   Resolver // nil: no DNS proofs
	Fetch       Fetcher  // nil: no HTTPS proofs
	Every       time.Duration
	MaxFailures int
	PerMinute   int
	MaxPeers    int
	MaxQueue    int
	Expiry      time.Duration
	Workers     int
	Now         func() time.Time
	Logger      *slog.Logger // nil: silent
	// SelfID and Self answer for this node's own peer id (its Checker's
	// verified domains); claims under SelfID from the network are ignored.
	SelfID string
	Self   func() []string

	mu     sync.Mutex
	peers  map[string]*peerClaims
	lru    list.List // *peerClaims, most recently heard first
	queue  []claimKey
	window time.Time // the start of the budget's minute
	spent  int       // proofs started in it
	wake   chan struct{}
	gen    atomic.Uint64
}

type claimKey struct{ peer, domain string }

type peerClaims struct {
	id      string
	heard   time.Time
	domains map[string]*Status
	queued  map[string]bool
	elem    *list.Element
}

func (c *Claims) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func orDefault[T int | time.Duration](v, d T) T {
	if v > 0 {
		return v
	}
	return d
}

func (c *Claims) init() {
	if c.peers == nil {
		c.peers = map[string]*peerClaims{}
		c.wake = make(chan struct{}, 1)
	}
}

// Claim takes the domains a peer's heartbeat claims (already checked by
// agent.CheckHeartbeatDomains): the ones it no longer claims are
// forgotten, the ones due a proof are queued. It returns at once.
func (c *Claims) Claim(peerID string, domains []string) {
	if peerID == "" || peerID == c.SelfID {
		return
	}
	now := c.now()
	c.mu.Lock()
	c.init()
	c.prune(now)
	p := c.peers[peerID]
	if p == nil {
		if len(domains) == 0 {
			c.mu.Unlock()
			return // nothing claimed, nothing to remember
		}
		for len(c.peers) >= orDefault(c.MaxPeers, DefaultMaxPeers) {
			c.drop(c.lru.Back().Value.(*peerClaims))
		}
		p = &peerClaims{id: peerID, domains: map[string]*Status{}, queued: map[string]bool{}}
		p.elem = c.lru.PushFront(p)
		c.peers[peerID] = p
	} else {
		c.lru.MoveToFront(p.elem)
	}
	p.heard = now
	changed := false
	for d, s := range p.domains {
		if !slices.Contains(domains, d) {
			changed = changed || s.Verified
			delete(p.domains, d)
			delete(p.queued, d) // its queued proof is skipped (next)
		}
	}
	queued := false
	for _, raw := range domains {
		d, err := NormalizeDomain(raw)
		if err != nil {
			continue
		}
		s := p.domains[d]
		if s == nil {
			if len(p.domains) >= MaxDomains {
				continue
			}
			s = &Status{Domain: d}
			p.domains[d] = s
		}
		if p.queued[d] || !s.CheckedAt.IsZero() && now.Sub(s.CheckedAt) < orDefault(c.Every, DefaultEvery) {
			continue
		}
		if len(c.queue) >= orDefault(c.MaxQueue, DefaultMaxQueue) {
			continue // queued again at the peer's next heartbeat
		}
		c.queue = append(c.queue, claimKey{peerID, d})
		p.queued[d] = true
		queued = true
	}
	if len(p.domains) == 0 {
		c.drop(p)
	}
	c.mu.Unlock()
	if changed {
		c.gen.Add(1)
	}
	if queued {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// prune forgets the peers not heard for Expiry (the least recently
// heard are at the back). Under mu.
func (c *Claims) prune(now time.Time) {
	for e := c.lru.Back(); e != nil; e = c.lru.Back() {
		p := e.Value.(*peerClaims)
		if now.Sub(p.heard) < orDefault(c.Expiry, DefaultExpiry) {
			return
		}
		c.drop(p)
	}
}

// drop forgets a peer (its queued proofs are skipped when their turn
// comes). Under mu.
func (c *Claims) drop(p *peerClaims) {
	for _, s := range p.domains {
		if s.Verified {
			c.gen.Add(1)
			break
		}
	}
	c.lru.Remove(p.elem)
	delete(c.peers, p.id)
}

// next takes the next queued proof if the minute's budget allows one.
// wait is how long until it does (0 when the queue is empty or a proof
// was taken).
func (c *Claims) next(now time.Time) (k claimKey, ok bool, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if now.Sub(c.window) >= time.Minute || now.Before(c.window) {
		c.window, c.spent = now, 0
	}
	for len(c.queue) > 0 {
		if c.spent >= orDefault(c.PerMinute, DefaultPerMinute) {
			return k, false, c.window.Add(time.Minute).Sub(now)
		}
		k, c.queue = c.queue[0], c.queue[1:]
		p := c.peers[k.peer]
		if p == nil || p.domains[k.domain] == nil {
			continue // forgotten meanwhile
		}
		delete(p.queued, k.domain)
		c.spent++
		return k, true, 0
	}
	c.queue = nil // let the backing array go
	return k, false, 0
}

// step runs one queued proof, if the budget allows; wait is as next's.
func (c *Claims) step(ctx context.Context) (ran bool, wait time.Duration) {
	k, ok, wait := c.next(c.now())
	if !ok {
		return false, wait
	}
	pc := &Checker{PeerID: k.peer, LookupTXT: c.LookupTXT, Fetch: c.Fetch}
	method, err := pc.Prove(ctx, k.domain)
	if ctx.Err() != nil {
		return true, 0
	}
	c.mu.Lock()
	var s *Status
	if p := c.peers[k.peer]; p != nil {
		s = p.domains[k.domain]
	}
	if s == nil {
		c.mu.Unlock()
		return true, 0
	}
	was := s.Verified
	s.CheckedAt = c.now()
	if err == nil {
		s.Verified, s.Method, s.VerifiedAt, s.Failures, s.LastError = true, method, s.CheckedAt, 0, ""
	} else {
		s.Failures++
		s.LastError = err.Error()
		if s.Failures >= orDefault(c.MaxFailures, DefaultMaxFailures) {
			s.Verified = false
		}
	}
	now := *s
	c.mu.Unlock()
	if was != now.Verified {
		c.gen.Add(1)
	}
	if c.Logger != nil {
		if err == nil {
			c.Logger.Debug("verify: a peer's domain proved", "peer_id", k.peer, "domain", k.domain, "method", method)
		} else {
			c.Logger.Debug("verify: a peer's domain not proved", "peer_id", k.peer, "domain", k.domain, "failures", now.Failures, "verified", now.Verified, "err", err)
		}
	}
	return true, 0
}

// CheckQueued runs the queued proofs the budget allows now, one after
// the other, and returns how many ran (Run does the same in the
// background; tests call it with their clock).
func (c *Claims) CheckQueued(ctx context.Context) int {
	n := 0
	for ctx.Err() == nil {
		ran, _ := c.step(ctx)
		if !ran {
			break
		}
		n++
	}
	return n
}

// Run works the queue with Workers workers until ctx ends, keeping to
// the minute's budget.
func (c *Claims) Run(ctx context.Context) {
	c.mu.Lock()
	c.init()
	wake := c.wake
	c.mu.Unlock()
	var wg sync.WaitGroup
	for range orDefault(c.Workers, DefaultWorkers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				ran, wait := c.step(ctx)
				if ran {
					continue
				}
				if wait <= 0 {
					wait = time.Minute // nothing queued: a claim wakes us
				}
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-wake:
					// Pass it on: the other workers may have work too.
					select {
					case wake <- struct{}{}:
					default:
					}
				case <-t.C:
				}
				t.Stop()
			}
		}()
	}
	wg.Wait()
}

// Domains is the domains proved for publisher (a peer id), sorted: this
// node's own for SelfID, otherwise those of its claims that are verified
// and whose peer was heard within Expiry; nil when none.
func (c *Claims) Domains(publisher string) []string {
	if publisher == "" {
		return nil
	}
	if publisher == c.SelfID {
		if c.Self == nil {
			return nil
		}
		return c.Self()
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[publisher]
	if p == nil || now.Sub(p.heard) >= orDefault(c.Expiry, DefaultExpiry) {
		return nil
	}
	return verifiedOf(p.domains)
}

// Publishers is the peers with at least one verified domain (this node
// included when it has one), sorted: the filter of "verified publishers
// only" searches.
func (c *Claims) Publishers() []string {
	var out []string
	if c.SelfID != "" && c.Self != nil && len(c.Self()) > 0 {
		out = append(out, c.SelfID)
	}
	now := c.now()
	c.mu.Lock()
	for id, p := range c.peers {
		if now.Sub(p.heard) >= orDefault(c.Expiry, DefaultExpiry) {
			continue
		}
		for _, s := range p.domains {
			if s.Verified {
				out = append(out, id)
				break
			}
		}
	}
	c.mu.Unlock()
	slices.Sort(out)
	return out
}

// Statuses is what this node knows of a peer's claims, sorted by domain
// (nil for a peer it does not remember).
func (c *Claims) Statuses(peerID string) []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.peers[peerID]
	if p == nil {
		return nil
	}
	out := make([]Status, 0, len(p.domains))
	for _, s := range p.domains {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Domain, b.Domain) })
	return out
}

// Peers is how many peers' claims are remembered.
func (c *Claims) Peers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.peers)
}

// Generation changes whenever a verified set may have changed (a proof
// held or failed for good, a peer forgotten, Changed): answers built from
// Domains or Publishers can be cached under it.
func (c *Claims) Generation() uint64 { return c.gen.Load() }

// Changed notes that Self's set changed (the node's Checker's OnChange).
func (c *Claims) Changed() { c.gen.Add(1) }
