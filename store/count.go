package store

import (
	"context"
	"errors"
)

// MatchCounter counts the listings a search matches (all its pages: its
// text and filters, both health passes; not its cursor, limit or sort),
// so that an API can say how many there are ("total"). An engine counts
// at most upTo (exact is false when it stopped there: there are at least
// n); the search index counts exactly from its bitmaps, at any size.
type MatchCounter interface {
	CountMatches(ctx context.Context, q SearchQuery, upTo int) (n int, exact bool, err error)
}

// MaxCountedMatches is how far an engine counts a search's matches when
// the search index cannot (while it loads, or for a filter it does not
// hold): a count(*) over a LIMIT, a few milliseconds at this size.
const MaxCountedMatches = 10_000

// countKey is q's part that its count depends on.
func countKey(q SearchQuery, upTo int) string {
	return SearchKey(SearchQuery{Q: q.Q, Tags: q.Tags, Statuses: q.Statuses, Health: q.Health, Owner: q.Owner, Publishers: q.Publishers, Limit: upTo})
}

// countResult is a count as the Cache keeps it.
type countResult struct {
	n     int
	exact bool
}

// CountMatches implements MatchCounter when the Network does, cached like
// the other reads.
func (c *Cache) CountMatches(ctx context.Context, q SearchQuery, upTo int) (int, bool, error) {
	mc, ok := c.next.(MatchCounter)
	if !ok {
		return 0, false, errNoCounter
	}
	v, err := c.get(ctx, "count\x00"+countKey(q, upTo), func(ctx context.Context) (any, error) {
		n, exact, err := mc.CountMatches(ctx, q, upTo)
		return countResult{n, exact}, err
	})
	if err != nil {
		return 0, false, err
	}
	r := v.(countResult)
	return r.n, r.exact, nil
}

// CountMatches implements MatchCounter when the Network does.
func (c Composed) CountMatches(ctx context.Context, q SearchQuery, upTo int) (int, bool, error) {
	mc, ok := c.Network.(MatchCounter)
	if !ok {
		return 0, false, errNoCounter
	}
	return mc.CountMatches(ctx, q, upTo)
}

// errNoCounter: the Network wrapped cannot count a search's matches.
var errNoCounter = errors.New("store: the catalogue cannot count a search's matches")
