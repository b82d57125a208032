// Package verify proves that a node's operator controls a domain, so the
// planet can show "verified: example.org" next to its agents: a
// domain is evidence a fresh identity lacks.
// A domain is proved by either:
//
//   - DNS: a TXT record on the domain reading agentsite-verify=<peer id>;
//   - HTTPS: https://<domain>/.well-known/agentsite.json listing the peer
//     id ({"peer_ids": ["12D3Koo..."]}).
//
// A proved domain is checked again every Every; after MaxFailures checks
// in a row fail it is no longer verified (as MCP SEP-1086 does), and a
// later success verifies it again. The package speaks no protocol itself:
// the composition root hands it a TXT resolver and a guarded HTTPS fetcher.
package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Defaults.
const (
	DefaultEvery       = 6 * time.Hour
	DefaultMaxFailures = 3
	// MaxDomains bounds the domains one node claims: as many as a
	// heartbeat may carry.
	MaxDomains = agent.MaxHeartbeatDomains
	// MaxWellKnownBytes bounds the HTTPS proof document.
	MaxWellKnownBytes = 64 << 10
	// TXTPrefix starts the DNS proof.
	TXTPrefix = "agentsite-verify="
	// WellKnownPath is the HTTPS proof's path.
	WellKnownPath = "/.well-known/agentsite.json"
	// checkTimeout bounds one check of one domain.
	checkTimeout = 15 * time.Second
)

// Methods of a proof.
const (
	MethodDNS   = "dns"
	MethodHTTPS = "https"
)

// ErrNotProved is a check that found no proof for this node.
var ErrNotProved = errors.New("no proof for this node")

// Resolver looks up TXT records (net.Resolver.LookupTXT).
type Resolver func(ctx context.Context, name string) ([]string, error)

// Fetcher GETs an HTTPS URL, reading at most max bytes, through the node's
// guarded client.
type Fetcher func(ctx context.Context, url string, max int64) ([]byte, error)

// Status is what the node knows of one domain it claims.
type Status struct {
	Domain     string    `json:"domain"`
	Verified   bool      `json:"verified"`
	Method     string    `json:"method,omitempty"` // the proof that last held
	VerifiedAt time.Time `json:"verified_at,omitzero"`
	CheckedAt  time.Time `json:"checked_at,omitzero"`
	Failures   int       `json:"failures"` // checks failed in a row
	LastError  string    `json:"last_error,omitempty"`
}

// Checker keeps this node's claimed domains verified.
type Checker struct {
	PeerID      string
	LookupTXT   Resolver // nil: no DNS proofs
	Fetch       Fetcher  // nil: no HTTPS proofs
	Every       time.Duration
	MaxFailures int
	Now         func() time.Time
	// OnChange is called (without the lock) when the set of verified
	// domains changed, e.g. to heartbeat it at once.
	OnChange func(verified []string)
	// Logger hears each check's outcome, and on failure what to publish
	// (nil: silent).
	Logger *slog.Logger

	mu      sync.Mutex
	domains map[string]*Status
}

// NormalizeDomain checks a claimed domain (agent.NormalizeDomain): a
// lower-case DNS name of at least two labels, letters, digits and
// hyphens, without a trailing dot.
func NormalizeDomain(d string) (string, error) { return agent.NormalizeDomain(d) }

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Checker) every() time.Duration {
	if c.Every > 0 {
		return c.Every
	}
	return DefaultEvery
}

func (c *Checker) maxFailures() int {
	if c.MaxFailures > 0 {
		return c.MaxFailures
	}
	return DefaultMaxFailures
}

// Claim adds domains to those the node claims (not yet verified: Check
// does that).
func (c *Checker) Claim(domains ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.domains == nil {
		c.domains = map[string]*Status{}
	}
	for _, raw := range domains {
		d, err := NormalizeDomain(raw)
		if err != nil {
			return err
		}
		if _, ok := c.domains[d]; ok {
			continue
		}
		if len(c.domains) >= MaxDomains {
			return fmt.Errorf("a node claims at most %d domains", MaxDomains)
		}
		c.domains[d] = &Status{Domain: d}
	}
	return nil
}

// Prove checks one domain's proofs now: DNS first, then HTTPS. It
// returns the method that proved it, or why none did.
func (c *Checker) Prove(ctx context.Context, domain string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var errs []error
	if c.LookupTXT != nil {
		txts, err := c.LookupTXT(ctx, domain)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("DNS TXT %s: %w", domain, err))
		case slices.Contains(trimAll(txts), TXTPrefix+c.PeerID):
			return MethodDNS, nil
		default:
			errs = append(errs, fmt.Errorf("DNS TXT %s: no %s%s among %d records", domain, TXTPrefix, c.PeerID, len(txts)))
		}
	}
	if c.Fetch != nil {
		url := "https://" + domain + WellKnownPath
		body, err := c.Fetch(ctx, url, MaxWellKnownBytes)
		if err == nil {
			err = c.listsPeer(body)
		}
		if err == nil {
			return MethodHTTPS, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", url, err))
	}
	if len(errs) == 0 {
		return "", errors.New("no way to check a proof (neither DNS nor HTTPS is configured)")
	}
	return "", fmt.Errorf("%w: %w", ErrNotProved, errors.Join(errs...))
}

// WellKnown is the HTTPS proof document.
type WellKnown struct {
	PeerIDs []string `json:"peer_ids"`
}

func (c *Checker) listsPeer(body []byte) error {
	var doc WellKnown
	if err := json.Unmarshal(body, &doc); err != nil {
		return fmt.Errorf("not a JSON document {\"peer_ids\": [...]}: %w", err)
	}
	if !slices.Contains(doc.PeerIDs, c.PeerID) {
		return fmt.Errorf("peer_ids does not list %s", c.PeerID)
	}
	return nil
}

func trimAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// CheckDue checks every claimed domain whose last check is older than
// Every (all of them, the first time): a success verifies it and clears
// its failures; a failure counts, and MaxFailures in a row unverify it.
func (c *Checker) CheckDue(ctx context.Context) {
	now := c.now()
	c.mu.Lock()
	var due []string
	for d, s := range c.domains {
		if s.CheckedAt.IsZero() || now.Sub(s.CheckedAt) >= c.every() {
			due = append(due, d)
		}
	}
	c.mu.Unlock()
	slices.Sort(due)
	changed := false
	for _, d := range due {
		method, err := c.Prove(ctx, d)
		if ctx.Err() != nil {
			return
		}
		c.mu.Lock()
		s := c.domains[d]
		if s == nil {
			c.mu.Unlock()
			continue
		}
		was := s.Verified
		s.CheckedAt = c.now()
		if err == nil {
			s.Verified, s.Method, s.VerifiedAt, s.Failures, s.LastError = true, method, s.CheckedAt, 0, ""
		} else {
			s.Failures++
			s.LastError = err.Error()
			if s.Failures >= c.maxFailures() {
				s.Verified = false
			}
		}
		changed = changed || was != s.Verified
		st := *s
		c.mu.Unlock()
		c.log(st, err)
	}
	if changed && c.OnChange != nil {
		c.OnChange(c.Verified())
	}
}

// log says how a check of one of this node's domains went; a failure says
// what the operator publishes to prove it.
func (c *Checker) log(s Status, err error) {
	if c.Logger == nil {
		return
	}
	if err == nil {
		c.Logger.Info("verify: domain proved", "domain", s.Domain, "method", s.Method)
		return
	}
	c.Logger.Warn("verify: domain not proved; publish a DNS TXT record or the HTTPS document",
		"domain", s.Domain, "verified", s.Verified, "failures", s.Failures, "err", err,
		"txt_record", s.Domain+" TXT \""+TXTPrefix+c.PeerID+"\"",
		"https_document", "https://"+s.Domain+WellKnownPath+` {"peer_ids":["`+c.PeerID+`"]}`)
}

// Verified is the domains verified now, sorted.
func (c *Checker) Verified() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return verifiedOf(c.domains)
}

// verifiedOf is the verified domains among ds, sorted.
func verifiedOf(ds map[string]*Status) []string {
	var out []string
	for d, s := range ds {
		if s.Verified {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// Statuses is every claimed domain's state, sorted by domain.
func (c *Checker) Statuses() []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Status, 0, len(c.domains))
	for _, s := range c.domains {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Domain, b.Domain) })
	return out
}

// Run checks the due domains at once and then every tick until ctx ends.
// tick bounds how late a due check runs (a tenth of Every, at least a
// minute, is plenty).
func (c *Checker) Run(ctx context.Context, tick time.Duration) {
	c.CheckDue(ctx)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.CheckDue(ctx)
		}
	}
}
