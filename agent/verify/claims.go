package verify

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// What a proof learns is kept by domain too, for Every: the peer ids its
// TXT records name and those its HTTPS document lists. So one domain costs
// a node at most one TXT look-up and one HTTPS fetch an Every, however
// many peers claim it and however often a peer drops and claims it again
// (a claim judged from what is kept spends no budget): a rogue that names
// a victim's domain cannot make the planet a reflector.
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

	mu       sync.Mutex
	peers    map[string]*peerClaims
	lru      list.List // *peerClaims, most recently heard first
	evidence map[string]*evidence
	queue    []claimKey
	window   time.Time // the start of the budget's minute
	spent    int       // proofs started in it
	wake     chan struct{}
	gen      atomic.Uint64
}

type claimKey struct{ peer, domain string }

// Bounds of what is kept by domain: the domains (the oldest go first past
// it; a proof charged to the budget makes each, so the budget bounds them
// too) and the peer ids kept of one proof (a domain proving more nodes
// than that proves the rest with a fetch of its own at their turn).
const (
	maxEvidence    = 4096
	maxEvidenceIDs = 64
)

// evidence is what the proofs of one domain found, whoever claimed it:
// the peer ids its TXT records name (dnsAt: when looked up, zero: not
// yet) and those its HTTPS document lists (webAt).
type evidence struct {
	dnsAt, webAt     time.Time
	dnsIDs, webIDs   []string
	dnsErr, webErr   string
	dnsFull, webFull bool // more ids than were kept: another peer's claim looks again
	busy             bool // a proof of it is running: its other claims wait
}

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
		c.evidence = map[string]*evidence{}
		c.wake = make(chan struct{}, 1)
	}
}

func (c *Claims) every() time.Duration { return orDefault(c.Every, DefaultEvery) }

// judge is the verdict on peer's claim of a domain from what its proofs
// found, if that is enough (done): the TXT records looked up within
// Every, and unless they name peer, the HTTPS document fetched within
// Every. needDNS and needWeb say what a proof must look up otherwise.
func (c *Claims) judge(ev *evidence, peer string, now time.Time) (method string, err error, done, needDNS, needWeb bool) {
	fresh := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) < c.every() && !now.Before(t) }
	var errs []error
	if c.LookupTXT != nil {
		if ev == nil || !fresh(ev.dnsAt) {
			return "", nil, false, true, c.Fetch != nil
		}
		if slices.Contains(ev.dnsIDs, peer) {
			return MethodDNS, nil, true, false, false
		}
		if ev.dnsFull {
			return "", nil, false, true, c.Fetch != nil
		}
		errs = append(errs, dnsMiss(ev.dnsErr, peer))
	}
	if c.Fetch != nil {
		if ev == nil || !fresh(ev.webAt) {
			return "", nil, false, false, true
		}
		if slices.Contains(ev.webIDs, peer) {
			return MethodHTTPS, nil, true, false, false
		}
		if ev.webFull {
			return "", nil, false, false, true
		}
		errs = append(errs, webMiss(ev.webErr, peer))
	}
	if len(errs) == 0 {
		return "", errors.New("no way to check a proof (neither DNS nor HTTPS is configured)"), true, false, false
	}
	return "", fmt.Errorf("%w: %w", ErrNotProved, errors.Join(errs...)), true, false, false
}

func dnsMiss(lookupErr, peer string) error {
	if lookupErr != "" {
		return errors.New("DNS TXT: " + lookupErr)
	}
	return fmt.Errorf("DNS TXT: no %s%s", TXTPrefix, peer)
}

func webMiss(fetchErr, peer string) error {
	if fetchErr != "" {
		return errors.New("HTTPS: " + fetchErr)
	}
	return fmt.Errorf("HTTPS: %s does not list %s", WellKnownPath, peer)
}

// evidenceFor is the kept evidence of domain, made if missing (the oldest
// forgotten past maxEvidence, and any older than Every). Under mu.
func (c *Claims) evidenceFor(domain string, now time.Time) *evidence {
	if ev := c.evidence[domain]; ev != nil {
		return ev
	}
	if len(c.evidence) >= maxEvidence {
		var oldest string
		var at time.Time
		for d, ev := range c.evidence {
			t := ev.dnsAt
			if ev.webAt.After(t) {
				t = ev.webAt
			}
			if ev.busy {
				continue
			}
			if now.Sub(t) >= c.every() {
				delete(c.evidence, d)
				continue
			}
			if oldest == "" || t.Before(at) {
				oldest, at = d, t
			}
		}
		if len(c.evidence) >= maxEvidence && oldest != "" {
			delete(c.evidence, oldest)
		}
	}
	ev := &evidence{}
	c.evidence[domain] = ev
	return ev
}

// settle records the verdict on a (peer, domain) status. Under mu; it
// says whether the verified set changed.
func (c *Claims) settle(s *Status, method string, err error, now time.Time) bool {
	was := s.Verified
	s.CheckedAt = now
	if err == nil {
		s.Verified, s.Method, s.VerifiedAt, s.Failures, s.LastError = true, method, now, 0, ""
	} else {
		s.Failures++
		s.LastError = err.Error()
		if s.Failures >= orDefault(c.MaxFailures, DefaultMaxFailures) {
			s.Verified = false
		}
	}
	return was != s.Verified
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
			// Not shown while not claimed; what its proof found stays
			// kept by domain for Every, so claiming it again proves it
			// again from that, not with a look-up.
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
		if p.queued[d] || !s.CheckedAt.IsZero() && now.Sub(s.CheckedAt) < c.every() {
			continue
		}
		if method, err, done, _, _ := c.judge(c.evidence[d], peerID, now); done {
			// Proved (or not) within Every, for this peer or another:
			// no look-up, no budget.
			changed = c.settle(s, method, err, now) || changed
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

// proofJob is one proof to run: the claim, and what to look up for it.
type proofJob struct {
	k        claimKey
	dns, web bool
}

// next takes the next queued claim that needs a look-up, if the minute's
// budget allows one. On its way it settles the claims that what is kept
// by domain already answers (no budget), and passes over those whose
// domain's proof is running (they are answered by it). wait is how long
// until the budget allows a proof (0 when none is waiting).
func (c *Claims) next(now time.Time) (j proofJob, ok bool, wait time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	if now.Sub(c.window) >= time.Minute || now.Before(c.window) {
		c.window, c.spent = now, 0
	}
	for i := 0; i < len(c.queue); {
		k := c.queue[i]
		p := c.peers[k.peer]
		s := (*Status)(nil)
		if p != nil {
			s = p.domains[k.domain]
		}
		if s == nil {
			c.queue = slices.Delete(c.queue, i, i+1) // forgotten meanwhile
			continue
		}
		ev := c.evidence[k.domain]
		method, err, done, needDNS, needWeb := c.judge(ev, k.peer, now)
		switch {
		case done:
			c.queue = slices.Delete(c.queue, i, i+1)
			delete(p.queued, k.domain)
			if c.settle(s, method, err, now) {
				c.gen.Add(1)
			}
			continue
		case ev != nil && ev.busy:
			i++
			continue
		case c.spent >= orDefault(c.PerMinute, DefaultPerMinute):
			return j, false, c.window.Add(time.Minute).Sub(now)
		}
		c.queue = slices.Delete(c.queue, i, i+1)
		delete(p.queued, k.domain)
		c.spent++
		c.evidenceFor(k.domain, now).busy = true
		return proofJob{k: k, dns: needDNS, web: needWeb}, true, 0
	}
	if len(c.queue) == 0 {
		c.queue = nil // let the backing array go
	}
	return j, false, 0
}

// step runs one queued proof, if the budget allows; wait is as next's.
func (c *Claims) step(ctx context.Context) (ran bool, wait time.Duration) {
	j, ok, wait := c.next(c.now())
	if !ok {
		return false, wait
	}
	k := j.k
	found := c.lookUp(ctx, j)
	c.mu.Lock()
	ev := c.evidenceFor(k.domain, c.now())
	ev.busy = false
	if ctx.Err() != nil {
		c.mu.Unlock()
		return true, 0
	}
	now := c.now()
	if j.dns {
		ev.dnsAt, ev.dnsIDs, ev.dnsErr, ev.dnsFull = now, found.dnsIDs, found.dnsErr, found.dnsFull
	}
	if found.fetched {
		ev.webAt, ev.webIDs, ev.webErr, ev.webFull = now, found.webIDs, found.webErr, found.webFull
	}
	var st Status
	changed, settled := false, false
	var err error
	if p := c.peers[k.peer]; p != nil {
		if s := p.domains[k.domain]; s != nil {
			var method string
			var done bool
			if method, err, done, _, _ = c.judge(ev, k.peer, now); !done {
				err = fmt.Errorf("%w: the proof could not be completed", ErrNotProved)
			}
			changed, settled, st = c.settle(s, method, err, now), true, *s
		}
	}
	more := len(c.queue) > 0
	c.mu.Unlock()
	if changed {
		c.gen.Add(1)
	}
	if more { // claims of the same domain waited for this proof
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	if c.Logger != nil && settled {
		if err == nil {
			c.Logger.Debug("verify: a peer's domain proved", "peer_id", k.peer, "domain", k.domain, "method", st.Method)
		} else {
			c.Logger.Debug("verify: a peer's domain not proved", "peer_id", k.peer, "domain", k.domain, "failures", st.Failures, "verified", st.Verified, "err", err)
		}
	}
	return true, 0
}

// found is what one proof's look-ups found.
type found struct {
	dnsIDs, webIDs   []string
	dnsErr, webErr   string
	dnsFull, webFull bool
	fetched          bool
}

// lookUp runs a proof's look-ups: the TXT records if due, then, unless
// they name the claimant, the HTTPS document if due.
func (c *Claims) lookUp(ctx context.Context, j proofJob) (f found) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if j.dns && c.LookupTXT != nil {
		txts, err := c.LookupTXT(ctx, j.k.domain)
		if err != nil {
			f.dnsErr = err.Error()
		}
		f.dnsIDs, f.dnsFull = namedIDs(txts)
		if slices.Contains(f.dnsIDs, j.k.peer) {
			return f
		}
	}
	if j.web && c.Fetch != nil && ctx.Err() == nil {
		f.fetched = true
		body, err := c.Fetch(ctx, "https://"+j.k.domain+WellKnownPath, MaxWellKnownBytes)
		var doc WellKnown
		if err == nil {
			if err = json.Unmarshal(body, &doc); err != nil {
				err = fmt.Errorf("not a JSON document {\"peer_ids\": [...]}: %w", err)
			}
		}
		if err != nil {
			f.webErr = err.Error()
		}
		f.webIDs, f.webFull = capIDs(doc.PeerIDs)
	}
	return f
}

// namedIDs is the peer ids TXT records name (agentsite-verify=<id>), at
// most maxEvidenceIDs (full: there were more).
func namedIDs(txts []string) (ids []string, full bool) {
	for _, t := range txts {
		if id, ok := strings.CutPrefix(strings.TrimSpace(t), TXTPrefix); ok && id != "" {
			ids = append(ids, id)
		}
	}
	return capIDs(ids)
}

func capIDs(ids []string) ([]string, bool) {
	if len(ids) > maxEvidenceIDs {
		return slices.Clone(ids[:maxEvidenceIDs]), true
	}
	return ids, false
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

// Due is the domains of a claim that would cost this node a look-up: not
// claimed by peerID with a verdict younger than Every nor a proof queued,
// and not answered by what is kept by domain. p2p charges each to the
// introduction budget of the peer that forwarded the heartbeat, before
// Claim: a forwarder pays for the strangers' domains it brings.
func (c *Claims) Due(peerID string, domains []string) []string {
	if peerID == "" || peerID == c.SelfID || len(domains) == 0 {
		return nil
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.init()
	p := c.peers[peerID]
	var out []string
	for _, raw := range domains {
		d, err := NormalizeDomain(raw)
		if err != nil {
			continue
		}
		if p != nil {
			if s := p.domains[d]; s != nil && (p.queued[d] || !s.CheckedAt.IsZero() && now.Sub(s.CheckedAt) < c.every()) {
				continue
			}
		}
		if _, _, done, _, _ := c.judge(c.evidence[d], peerID, now); done {
			continue
		}
		out = append(out, d)
	}
	return out
}
