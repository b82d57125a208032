// Package discover is the use case "find agents for a query", the one
// owner of search for every surface (the API's /api/v1/agents, the MCP
// Registry API's /v0.1/servers, MCP's search_agents, ARD's /ard, the
// portal's network search, a delegating agent's find_agents, the A2A
// concierge):
//
//   - a page of the catalogue (Search), always through the search index
//     behind the read cache, and a surface's encoded answer to it kept by
//     the read cache's memo (Answer), so a repeated search on any surface
//     costs a map look-up;
//   - a page with a filter the index does not hold, read in bounded pages
//     (SearchKept);
//   - a sentence's search merged from narrower ones (Find);
//   - a round on the DHT for what the mirror may lack (Lookup): the
//     providers of tags and the records of ids, with one set of limits
//     (how many tags, ids and providers, how long, how many rounds at
//     once on the node), and the window that says which listings the
//     round brought (Round.Brought), which a paged walk carries on
//     (WalkCursor).
//
// It speaks no protocol: surfaces parse their requests into a
// store.SearchQuery and encode the answer in their own shapes.
package discover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Catalogue is what discover reads: the store behind the read cache (the
// search index in front of the engine).
type Catalogue interface {
	SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error)
	GetAgent(ctx context.Context, id string) (store.Listing, error)
}

// Memo is the read cache's memo (store.Cache.Memo): a value derived from
// the catalogue, kept until the next write. A Catalogue that has one
// keeps the surfaces' answers (Answer).
type Memo interface {
	Memo(ctx context.Context, key string, load func(ctx context.Context, n store.Network) (any, error)) (any, error)
}

// Network is the DHT side of a round (p2p.Node).
type Network interface {
	// SearchTag asks the DHT who provides tag and pulls at most
	// maxProviders providers' listings into the cache.
	SearchTag(ctx context.Context, tag string, maxProviders int) (providers, changed int, err error)
}

// Finder loads a listing by id, asking the DHT when the cache lacks it
// (registry.Find).
type Finder interface {
	Find(ctx context.Context, id string) (store.Listing, error)
}

// Default limits (Limits' zero fields).
const (
	// DefaultTags is how many tags one round asks the DHT for.
	DefaultTags = 4
	// DefaultIdentifiers is how many listing ids one round looks up.
	DefaultIdentifiers = 8
	// DefaultProviders is how many providers of one tag a round pulls
	// listings from.
	DefaultProviders = 20
	// DefaultDeadline is a round's deadline unless the caller asks for
	// another, at most MaxDeadline.
	DefaultDeadline = 5 * time.Second
	MaxDeadline     = 15 * time.Second
	// DefaultRounds is how many rounds the node runs at once; one more is
	// refused with ErrBusy (the caller answers from the mirror, or asks
	// again later).
	DefaultRounds = 4
	// DefaultFound is how many agents a sentence's search (Find) returns.
	DefaultFound = 8
	// DefaultWords is how many of a sentence's words are searched one by
	// one when the whole finds nothing; words shorter than MinWordRunes
	// are not searched alone.
	DefaultWords = 8
	MinWordRunes = 3
	// DefaultFilteredScan bounds the listings a search filtered on what
	// the index does not hold reads (SearchKept).
	DefaultFilteredScan = 2000
)

// Limits bound what one search may cost; zero fields take the defaults
// above (tests lower them).
type Limits struct {
	Tags         int
	Identifiers  int
	Providers    int
	Deadline     time.Duration
	MaxDeadline  time.Duration
	Rounds       int
	Found        int
	Words        int
	FilteredScan int
}

func (l Limits) filled() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.Tags, DefaultTags)
	def(&l.Identifiers, DefaultIdentifiers)
	def(&l.Providers, DefaultProviders)
	def(&l.Rounds, DefaultRounds)
	def(&l.Found, DefaultFound)
	def(&l.Words, DefaultWords)
	def(&l.FilteredScan, DefaultFilteredScan)
	if l.Deadline <= 0 {
		l.Deadline = DefaultDeadline
	}
	if l.MaxDeadline <= 0 {
		l.MaxDeadline = MaxDeadline
	}
	l.Deadline = min(l.Deadline, l.MaxDeadline)
	return l
}

// Deps are what a Discover reads. Catalogue is required; Network nil:
// no DHT (offline); Finder nil: no look-up of ids.
type Deps struct {
	Catalogue Catalogue
	Network   Network
	Finder    Finder
	Limits    Limits
	// Now is the clock of the rounds' windows (nil: time.Now).
	Now func() time.Time
}

// Discover finds agents for a query. Build it with New.
type Discover struct {
	catalogue Catalogue
	network   Network
	finder    Finder
	limits    Limits
	now       func() time.Time
	rounds    chan struct{}
}

// New is a Discover on d.
func New(d Deps) *Discover {
	l := d.Limits.filled()
	now := d.Now
	if now == nil {
		now = time.Now
	}
	return &Discover{catalogue: d.Catalogue, network: d.Network, finder: d.Finder, limits: l, now: now,
		rounds: make(chan struct{}, l.Rounds)}
}

// Limits are the limits in force (defaults filled in).
func (d *Discover) Limits() Limits { return d.limits }

// Federates reports whether d can ask the DHT.
func (d *Discover) Federates() bool { return d.network != nil }

// ErrBusy refuses a round while the node runs as many as it allows.
var ErrBusy = errors.New("the node runs as many network searches as it allows; try again in a moment")

// ErrNoNetwork: the node has no DHT (offline).
var ErrNoNetwork = errors.New("this node is not on the network")

// Search is one page of the catalogue for q.
func (d *Discover) Search(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	page, err := d.catalogue.SearchAgents(ctx, q)
	if err != nil {
		return page, fmt.Errorf("search: %w", err)
	}
	return page, nil
}

// Result is a page as a surface encodes it (Answer).
type Result struct {
	Page store.SearchPage
	q    store.SearchQuery
	c    store.MatchCounter // nil: the catalogue cannot count
}

// Total is how many listings the search matches over all its pages:
// exact from the search index, else counted up to store.MaxCountedMatches
// (exact false when it stopped there); ok false when the catalogue cannot
// count.
func (r Result) Total(ctx context.Context) (n int, exact, ok bool, err error) {
	if r.c == nil {
		return 0, false, false, nil
	}
	n, exact, err = r.c.CountMatches(ctx, r.q, store.MaxCountedMatches)
	if err != nil {
		return 0, false, false, fmt.Errorf("count matches: %w", err)
	}
	return n, exact, true, nil
}

// Answer is a surface's answer to q, built by encode from the page: kept
// by the read cache's memo when the catalogue has one (a repeated search
// costs a map look-up, not a search and an encoding), so key must name
// the surface and everything else the answer depends on (q is added to
// it). Every surface's page comes from the same search.
func (d *Discover) Answer(ctx context.Context, key string, q store.SearchQuery, encode func(ctx context.Context, r Result) (any, error)) (any, error) {
	build := func(ctx context.Context, c Catalogue) (any, error) {
		page, err := c.SearchAgents(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
		r := Result{Page: page, q: q}
		if mc, ok := c.(store.MatchCounter); ok {
			r.c = mc
		}
		return encode(ctx, r)
	}
	m, ok := d.catalogue.(Memo)
	if !ok {
		return build(ctx, d.catalogue)
	}
	return m.Memo(ctx, "discover\x00"+key+"\x00"+store.SearchKey(q), func(ctx context.Context, n store.Network) (any, error) {
		return build(ctx, n)
	})
}

// SearchKept is one page of q's search keeping only the listings keep
// accepts (a filter the index does not hold: publishers' domains):
// pages are read in turn, each no longer than what is still missing (so
// the cursor stays exact), within Limits.FilteredScan listings. keep nil
// is Search.
func (d *Discover) SearchKept(ctx context.Context, q store.SearchQuery, keep func(store.Listing) bool) ([]store.Listing, string, error) {
	if keep == nil {
		page, err := d.Search(ctx, q)
		return page.Listings, page.NextCursor, err
	}
	var out []store.Listing
	limit, scanned := store.NormalizeLimit(q.Limit), 0
	for {
		q.Limit = limit - len(out)
		page, err := d.Search(ctx, q)
		if err != nil {
			return nil, "", err
		}
		scanned += len(page.Listings)
		for _, l := range page.Listings {
			if keep(l) {
				out = append(out, l)
			}
		}
		q.Cursor = page.NextCursor
		if len(out) >= limit || page.NextCursor == "" || scanned >= d.limits.FilteredScan || ctx.Err() != nil {
			return out, page.NextCursor, nil
		}
	}
}

// Mirrored is the listing of id from the mirror alone (nil when it lacks
// it, or holds only its tombstone).
func (d *Discover) Mirrored(ctx context.Context, id string) (*store.Listing, error) {
	l, err := d.catalogue.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get agent: %w", err)
	case l.Record.Tombstone:
		return nil, nil
	}
	return &l, nil
}

// validTag is a tag the DHT can be asked for.
func validTag(t string) bool { return agent.IsSlug(t, 1, agent.MaxTagLen) }
