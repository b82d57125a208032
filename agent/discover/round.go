package discover

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/agentsite/agentsite/store"
)

// Ask is what one DHT round looks for.
type Ask struct {
	// Tags: the providers of each are asked for their listings (pulled
	// into the mirror through catalogue sync); the first Limits.Tags
	// valid ones are asked.
	Tags []string
	// IDs: the records of these listings, looked up when the mirror lacks
	// them; the first Limits.Identifiers are asked.
	IDs []string
	// Deadline bounds the round (0: Limits.Deadline; at most
	// Limits.MaxDeadline).
	Deadline time.Duration
}

// Round is what a round asked the DHT and what came of it.
type Round struct {
	Tags        []string
	Identifiers int
	Providers   int // providers that answered
	Records     int // listings new or updated in the mirror
	Errors      int
	Err         error // the first failure, nil when none
	Deadline    time.Duration
	Elapsed     time.Duration
	TimedOut    bool
	// Started is a millisecond before the round began, Ended a
	// millisecond after it ended: a listing whose row changed within them
	// came from it (Brought), whatever the clock's grain.
	Started, Ended time.Time
}

// Brought says whether l came from the round: its row changed within the
// round's window.
func (r Round) Brought(l store.Listing) bool {
	return InWindow(l, r.Started, r.Ended)
}

// InWindow says whether l's row changed within [start, end].
func InWindow(l store.Listing, start, end time.Time) bool {
	return !l.UpdatedAt.Before(start) && !l.UpdatedAt.After(end)
}

// QueryTags is what a round asks tag providers for on behalf of a search:
// its tags, else the words of its text that are tags, at most
// Limits.Tags.
func (d *Discover) QueryTags(q store.SearchQuery) []string {
	tags := append([]string(nil), q.Tags...)
	if len(tags) == 0 {
		for _, w := range strings.Fields(strings.ToLower(q.Q)) {
			if validTag(w) {
				tags = append(tags, w)
			}
		}
	}
	return d.capTags(tags)
}

// capTags is the valid tags of tags, each once, at most Limits.Tags.
func (d *Discover) capTags(tags []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if !validTag(t) || seen[t] {
			continue
		}
		seen[t] = true
		if out = append(out, t); len(out) == d.limits.Tags {
			break
		}
	}
	return out
}

// Lookup runs one round on the DHT for a: the providers of its tags and
// the records of its ids the mirror lacks, all at once, within its
// deadline. It refuses with ErrBusy while the node runs Limits.Rounds
// rounds, and with ErrNoNetwork offline. A look-up that fails is counted
// (Round.Errors, the first in Round.Err); the round goes on.
func (d *Discover) Lookup(ctx context.Context, a Ask) (Round, error) {
	deadline := a.Deadline
	if deadline <= 0 {
		deadline = d.limits.Deadline
	}
	deadline = min(deadline, d.limits.MaxDeadline)
	ids := a.IDs
	if len(ids) > d.limits.Identifiers {
		ids = ids[:d.limits.Identifiers]
	}
	run := Round{Tags: d.capTags(a.Tags), Identifiers: len(ids), Deadline: deadline}
	if d.network == nil {
		return run, ErrNoNetwork
	}
	select {
	case d.rounds <- struct{}{}:
		defer func() { <-d.rounds }()
	default:
		return run, ErrBusy
	}
	begun := d.now()
	run.Started = begun.Add(-time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	var mu sync.Mutex
	failed := func(err error) {
		run.Errors++
		if run.Err == nil {
			run.Err = err
		}
	}
	var wg sync.WaitGroup
	for _, tag := range run.Tags {
		wg.Go(func() {
			p, c, err := d.network.SearchTag(ctx, tag, d.limits.Providers)
			mu.Lock()
			defer mu.Unlock()
			run.Providers += p
			run.Records += c
			if err != nil {
				failed(err)
			}
		})
	}
	if d.finder != nil {
		for _, id := range ids {
			wg.Go(func() {
				if l, _ := d.Mirrored(ctx, id); l != nil {
					return // the mirror has it
				}
				_, err := d.finder.Find(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed(err)
					return
				}
				run.Records++
			})
		}
	}
	wg.Wait()
	run.Elapsed = d.now().Sub(begun)
	run.Ended = run.Started.Add(run.Elapsed + 2*time.Millisecond)
	run.TimedOut = ctx.Err() != nil
	return run, nil
}
