package store_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// TestCacheIsNetworkOnly: the read cache has exactly Network's methods,
// each written out (cache.go), so a method added to the roles it caches
// cannot pass through it unseen, and the roles it does not cache (accounts,
// sessions, conversations, backends) cannot be reached through it at all.
func TestCacheIsNetworkOnly(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		for m := range typ.Methods() {
			out = append(out, m.Name)
		}
		slices.Sort(out)
		return out
	}
	var c any = store.NewCache(nil, 0, 0)
	if _, ok := c.(interface {
		AppendMessage(context.Context, store.Message) (store.Message, error)
	}); ok {
		t.Error("the cache passes conversations through")
	}
	got := names(reflect.TypeFor[*store.Cache]())
	// Memo caches values derived from Network reads; Len reports the size;
	// the Evictor's two (capacity.go) invalidate like Network's writes;
	// GetAgents (sync_own.go) reads many listings uncached; AgentsLen
	// reports GetAgent's LRU (cache_agents.go); CountMatches (count.go)
	// counts a query's matches uncached; Batcher hands the registry the
	// engine's transactions (cache_sync.go), which invalidate as the
	// Sink's writes do; Backends wraps the engine's backends in an LRU
	// that the Batcher's batches invalidate too (cache_backends.go), and
	// BackendsLen reports it; Conversations wraps the engine's
	// conversations in a cache of their newest messages, each read
	// checked against the engine (cache_messages.go), and TailStats
	// reports it.
	want := append(names(reflect.TypeFor[store.Network]()), "Len", "Memo", "CountListings", "EvictListings", "EvictListingsFor", "GetAgents", "AgentsLen", "CountMatches", "Batcher", "Backends", "BackendsLen", "Conversations", "TailStats")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("*store.Cache has methods %v, want Network's and Len, Memo, the Evictor's, GetAgents, AgentsLen, CountMatches, Batcher, Backends, BackendsLen, Conversations, TailStats: %v", got, want)
	}
}

// fakeNetwork answers every search with a page of limit listings the size
// of real ones (a 1.5 KB envelope each) and counts the calls.
type fakeNetwork struct {
	store.Network
	searches int
	version  int
}

func (f *fakeNetwork) SearchAgents(_ context.Context, q store.SearchQuery) (store.SearchPage, error) {
	f.searches++
	page := store.SearchPage{}
	for i := range store.NormalizeLimit(q.Limit) {
		page.Listings = append(page.Listings, store.Listing{
			Record:   agent.Record{ID: fmt.Sprintf("%s-%d-v%d", q.Q, i, f.version), Description: strings.Repeat("d", 300)},
			Envelope: make([]byte, 1500),
		})
	}
	return page, nil
}

func (f *fakeNetwork) UpsertRecord(context.Context, store.Listing) error {
	f.version++
	return nil
}

// TestCacheBoundsMemory: distinct searches (each one a miss) do not pile
// up: what the cache holds stays within CacheMaxBytes, where it used to
// keep every page until it held max entries.
func TestCacheBoundsMemory(t *testing.T) {
	f := &fakeNetwork{}
	c := store.NewCache(f, time.Hour, 10_000)
	for i := range 5_000 {
		if _, err := c.SearchAgents(t.Context(), store.SearchQuery{Q: fmt.Sprintf("q%d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, bytes := c.Len(); bytes > store.CacheMaxBytes {
			t.Fatalf("after %d searches the cache holds %d bytes, over %d", i+1, bytes, store.CacheMaxBytes)
		}
	}
	if n, _ := c.Len(); n == 0 || n >= 5_000 {
		t.Errorf("cache holds %d entries after 5000 distinct searches", n)
	}
	// Served from the cache while it lasts.
	before := f.searches
	if _, err := c.SearchAgents(t.Context(), store.SearchQuery{Q: "q4999"}); err != nil || f.searches != before {
		t.Errorf("a repeated search went to the store (err %v)", err)
	}
}

// TestCacheMemo: a memo is kept until a write, then loaded again from the
// wrapped store, not from the cached reads.
func TestCacheMemo(t *testing.T) {
	f := &fakeNetwork{}
	c := store.NewCache(f, time.Hour, 100)
	loads := 0
	load := func(ctx context.Context, n store.Network) (any, error) {
		loads++
		if _, ok := n.(*store.Cache); ok {
			t.Error("memo loads through the cache")
		}
		p, err := n.SearchAgents(ctx, store.SearchQuery{Q: "w", Limit: 1})
		if err != nil {
			return nil, err
		}
		return []byte(p.Listings[0].Record.ID), nil
	}
	for range 3 {
		v, err := c.Memo(t.Context(), "k", load)
		if err != nil || string(v.([]byte)) != "w-0-v0" || loads != 1 {
			t.Fatalf("memo = %s, %v after %d loads", v, err, loads)
		}
	}
	if err := c.UpsertRecord(t.Context(), store.Listing{}); err != nil {
		t.Fatal(err)
	}
	v, err := c.Memo(t.Context(), "k", load)
	if err != nil || string(v.([]byte)) != "w-0-v1" || loads != 2 {
		t.Fatalf("memo after a write = %s, %v after %d loads", v, err, loads)
	}
	// Through Composed, as the node wires it.
	v, err = store.Composed{Network: c}.Memo(t.Context(), "k", load)
	if err != nil || string(v.([]byte)) != "w-0-v1" || loads != 2 {
		t.Fatalf("memo through Composed = %s, %v after %d loads", v, err, loads)
	}
}
