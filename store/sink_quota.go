package store

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// Quotas follow evidence (docs/architecture.md "Listings held"). A
// publisher this node does not hear (no node row, or one gone offline)
// holds at most MaxPerPublisher listings that are not offline: fresh
// identities are free to make, so each gets little. A publisher it hears
// is allowed what its signed heartbeats say it hosts (agents_hosted, and
// a tenth more for what it registered since and its tombstones), up to
// --max-listings, but earns that room gradually: its allowance starts at
// MaxPerPublisher and doubles every QuotaDoubling it has been heard
// (FirstHeard). An honest host of 50,000 agents is allowed all of them
// within three doublings of its first heartbeat; one identity that claims a
// million needs seven, and at --max-listings it evicts only listings of
// hosts heard no longer than itself (Capacity). A publisher whose domain
// this node proved (Sink.Verified) counts as heard for verifiedCredit
// more: a domain costs what fresh identities do not, so a verified host
// is allowed its claim at once and its listings outrank those of
// publishers heard for less than a day.

// DefaultQuotaDoubling is Sink.QuotaDoubling when unset: six of the
// default heartbeat intervals. A sync refused over a quota is tried again
// 3, 6 and 9 heartbeat intervals apart (p2p), so a heard host's allowance
// has doubled three times by the last try.
const DefaultQuotaDoubling = time.Minute

// claimSlack is the share of a heard publisher's claim allowed beyond it:
// its agents registered since its last heartbeat, and its tombstones,
// which this node holds and the claim does not count.
const claimSlack = 10 // a tenth

// quotaLogEvery is how often the log names one publisher's refusals.
const quotaLogEvery = time.Minute

// verifiedCredit is how long a publisher with a proved domain counts as
// heard beyond its row (Sink.since): with the default doubling, far more
// than its claim needs.
const verifiedCredit = 24 * time.Hour

// maxRefusals bounds the publishers whose refusals the Sink remembers.
const maxRefusals = 10_000

func (s *Sink) quotaDoubling() time.Duration {
	if s.QuotaDoubling > 0 {
		return s.QuotaDoubling
	}
	return DefaultQuotaDoubling
}

// nodesOf is the node rows of peers (those that have one), in one look-up.
func (s *Sink) nodesOf(ctx context.Context, peers ...string) (map[string]Node, error) {
	out := make(map[string]Node, len(peers))
	var ids []string
	seen := make(map[string]bool, len(peers))
	for _, p := range peers {
		if !seen[p] {
			seen[p] = true
			ids = append(ids, p)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	nodes, err := s.Store.GetNodes(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("look up nodes: %w", err)
	}
	for _, n := range nodes {
		out[n.PeerID] = n
	}
	return out, nil
}

// heardSince is when this node began hearing p by its row, and whether it
// hears p at all (a row that is not offline).
func heardSince(nodes map[string]Node, p string) (time.Time, bool) {
	n, ok := nodes[p]
	if !ok || n.Status == StatusOffline || n.FirstHeard.IsZero() {
		return time.Time{}, false
	}
	return n.FirstHeard, true
}

// since is when p began to earn evidence at now: its row's FirstHeard,
// brought back by verifiedCredit when its domain is proved; ok is false
// when it earns none (neither heard nor verified).
func (s *Sink) since(nodes map[string]Node, p string, now time.Time) (time.Time, bool) {
	since, heard := heardSince(nodes, p)
	if s.Verified == nil || !s.Verified(p) {
		return since, heard
	}
	if credit := now.Add(-verifiedCredit); !heard || since.After(credit) {
		since = credit
	}
	return since, true
}

// evidence is the evidence rec's listing earns at now (Capacity.Admit):
// since when both its publisher and its host earn it (s.since), the later
// of the two; now when either earns none (no evidence: it evicts only
// listings of hosts never heard and offline ones).
func (s *Sink) evidence(rec *agent.Record, nodes map[string]Node, now time.Time) time.Time {
	var e time.Time
	for _, p := range []string{rec.Publisher, rec.HostPeerID()} {
		since, ok := s.since(nodes, p, now)
		if !ok {
			return now
		}
		if since.After(e) {
			e = since
		}
	}
	return e
}

// quotaOf is how many listings that are not offline publisher pub may hold
// here at now, its node row (if any) in nodes.
func (s *Sink) quotaOf(pub string, nodes map[string]Node, now time.Time) int {
	small := s.maxPerPublisher()
	since, ok := s.since(nodes, pub, now)
	if !ok {
		return small
	}
	claim, ok := s.heard.claimOf(pub)
	if !ok {
		claim = nodes[pub].AgentsHosted // capped at what is held: grows as it is
	}
	limit := claim + claim/claimSlack
	earned := float64(small) * math.Exp2(float64(max(now.Sub(since), 0))/float64(s.quotaDoubling()))
	if earned < float64(limit) {
		limit = int(earned)
	}
	if s.Capacity != nil && s.Capacity.Max > 0 {
		limit = min(limit, s.Capacity.Max)
	}
	return max(limit, small)
}

// PublisherRefusal is what a Sink refused of one publisher over its quota:
// for the pages and API that say what a node does not hold, and why.
type PublisherRefusal struct {
	Publisher string
	// Refused counts the new listings refused since the Sink started.
	Refused int
	// Held and Limit are the publisher's listings here and its quota at
	// the last refusal.
	Held, Limit int
	Last        time.Time // the last refusal
	Heard       bool      // whether the publisher was heard then (its quota grows)
}

// refusals is the Sink's memory of quota refusals, by publisher.
type refusals struct {
	mu sync.Mutex
	m  map[string]*refusalLog
}

type refusalLog struct {
	PublisherRefusal
	logged   time.Time // when the log last named it
	unlogged int       // refused since
}

// QuotaRefusals is the publishers whose new listings this Sink refused
// over their quota (at most the 10,000 last), most refused first.
func (s *Sink) QuotaRefusals() []PublisherRefusal {
	s.refused.mu.Lock()
	defer s.refused.mu.Unlock()
	out := make([]PublisherRefusal, 0, len(s.refused.m))
	for _, r := range s.refused.m {
		out = append(out, r.PublisherRefusal)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Refused != out[j].Refused {
			return out[i].Refused > out[j].Refused
		}
		return out[i].Publisher < out[j].Publisher
	})
	return out
}

// overQuota is the error of a new listing of pub refused at held of
// limit; it is noted, and the log names the publisher at most once a
// quotaLogEvery with the flag that raises its quota.
func (s *Sink) overQuota(pub string, held, limit int, heard bool, now time.Time) error {
	s.refused.mu.Lock()
	if s.refused.m == nil || len(s.refused.m) >= maxRefusals && s.refused.m[pub] == nil {
		s.refused.m = map[string]*refusalLog{}
	}
	r := s.refused.m[pub]
	if r == nil {
		r = &refusalLog{PublisherRefusal: PublisherRefusal{Publisher: pub}}
		s.refused.m[pub] = r
	}
	r.Refused++
	r.unlogged++
	r.Held, r.Limit, r.Last, r.Heard = held, limit, now, heard
	logIt := r.logged.IsZero() || now.Sub(r.logged) >= quotaLogEvery
	var n int
	if logIt {
		r.logged, n, r.unlogged = now, r.unlogged, 0
	}
	s.refused.mu.Unlock()
	if logIt && s.Logger != nil {
		if heard {
			s.Logger.Warn("refused new listings of a heard publisher over its quota; it grows the longer the publisher is heard, up to what its heartbeats say it hosts and --max-listings",
				"publisher", pub, "refused", n, "held", held, "quota", limit, "raise", "--max-listings-per-publisher (where it starts)")
		} else {
			s.Logger.Warn("refused new listings of a publisher this node does not hear over its quota; its heartbeats earn it more",
				"publisher", pub, "refused", n, "held", held, "quota", limit, "raise", "--max-listings-per-publisher")
		}
	}
	what := "a publisher this node does not hear"
	if heard {
		what = "the quota earned so far"
	}
	return fmt.Errorf("%w: publisher %s holds %d listings here, the limit is %d (%s; --max-listings-per-publisher)", agent.ErrOverQuota, pub, held, limit, what)
}
