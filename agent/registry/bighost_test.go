package registry_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// countingStore counts what the host's timers read of the store: full
// listings (ListLocal, GetAgent) and the refs of the local pages.
type countingStore struct {
	store.Store

	mu        sync.Mutex
	listLocal int
	getAgent  int
	pages     int
	refs      int
	biggest   int
	counts    int
}

func (c *countingStore) CountLocal(ctx context.Context) (store.LocalCount, error) {
	c.mu.Lock()
	c.counts++
	c.mu.Unlock()
	return c.Store.CountLocal(ctx)
}

func (c *countingStore) ListLocal(ctx context.Context) ([]store.Listing, error) {
	c.mu.Lock()
	c.listLocal++
	c.mu.Unlock()
	return c.Store.ListLocal(ctx)
}

func (c *countingStore) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	c.mu.Lock()
	c.getAgent++
	c.mu.Unlock()
	return c.Store.GetAgent(ctx, id)
}

func (c *countingStore) LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	refs, err := c.Store.LocalRefs(ctx, q)
	c.mu.Lock()
	c.pages++
	c.refs += len(refs)
	c.biggest = max(c.biggest, len(refs))
	c.mu.Unlock()
	return refs, err
}

func (c *countingStore) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listLocal, c.getAgent, c.pages, c.refs, c.biggest, c.counts = 0, 0, 0, 0, 0, 0
}

// hostAgents stores n local listings of e's node straight into st, e's
// store underneath the counting (no signing: refresh re-signs from the
// stored record), expiring evenly from..to from now, and returns how many
// expire within window.
func hostAgents(t *testing.T, e *registrytest.Env, st store.Store, n int, from, to, window time.Duration) int {
	t.Helper()
	b, ok := st.(store.Batcher)
	if !ok {
		t.Fatal("the store is not a Batcher")
	}
	now := e.Clock.Now()
	due := 0
	err := b.InBatchWhole(t.Context(), func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			exp := now.Add(from + time.Duration(i)*(to-from)/time.Duration(n))
			if exp.Before(now.Add(window)) {
				due++
			}
			name := fmt.Sprintf("agent-%06d", i)
			id, err := e.Publisher.AgentID(name)
			if err != nil {
				return err
			}
			rec := agent.Record{ID: id, Name: name, DisplayName: "A", Version: "1.0.0",
				Publisher: e.PeerID, Seq: 1, IssuedAt: exp.Add(-registrytest.TTL), ExpiresAt: exp,
				Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: e.PeerID, Protocol: agent.MCPProtocol}}}
			l := store.Listing{Record: rec, Envelope: []byte("{}"), Status: store.StatusOnline, LastSeen: now,
				HostPeerID: e.PeerID, Local: true, UpdatedAt: now}
			if err := tx.UpsertRecord(ctx, l); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("store %d local agents: %v", n, err)
	}
	return due
}

// TestRefreshReadsOnlyWhatIsDue: with 2,000 hosted agents of which one
// in seven expires within the window, a refresh reads no listing in full but
// the due ones (one GetAgent each, to re-sign it), and the refs a page at
// a time; a second refresh finds nothing due and reads one short page.
// Before, each refresh read every hosted listing in full (ListLocal).
func TestRefreshReadsOnlyWhatIsDue(t *testing.T) {
	cs := &countingStore{Store: pgtest.Open(t)}
	e := registrytest.New(t, cs)
	const n = 2000
	due := hostAgents(t, e, cs.Store, n, 25*time.Minute, 60*time.Minute, registrytest.TTL/2)
	cs.reset()

	got, err := e.Registry.Refresh(t.Context(), registrytest.TTL/2)
	if err != nil {
		t.Fatal(err)
	}
	if got != due {
		t.Fatalf("refreshed %d, want the %d due", got, due)
	}
	if cs.listLocal != 0 || cs.getAgent != due || cs.refs != due || cs.biggest > store.MaxLocalPage || cs.pages != due/store.MaxLocalPage+1 || due == 0 {
		t.Fatalf("read %d full lists, %d listings, %d refs in %d pages (at most %d): want no list, %d listings and refs, pages of at most %d",
			cs.listLocal, cs.getAgent, cs.refs, cs.pages, cs.biggest, due, store.MaxLocalPage)
	}
	cs.reset()
	if got, err := e.Registry.Refresh(t.Context(), registrytest.TTL/2); err != nil || got != 0 {
		t.Fatalf("second refresh: %d, %v; want nothing due", got, err)
	}
	if cs.listLocal != 0 || cs.getAgent != 0 || cs.pages != 1 || cs.refs != 0 {
		t.Fatalf("second refresh read %d lists, %d listings, %d refs in %d pages; want one empty page", cs.listLocal, cs.getAgent, cs.refs, cs.pages)
	}
}

// TestRefreshIsSpreadOverTheTTL: 2,000 agents that all come due at once
// are re-signed a bounded share a tick (the hosted count over the ticks
// in a quarter of the TTL), the first to expire first, reading only the
// refs and listings of those it re-signs. Before, one pass re-signed
// every due listing.
func TestRefreshIsSpreadOverTheTTL(t *testing.T) {
	cs := &countingStore{Store: pgtest.Open(t)}
	e := registrytest.New(t, cs)
	const n = 2000
	hostAgents(t, e, cs.Store, n, 20*time.Minute, 30*time.Minute, 0) // all due
	tick := time.Minute                                              // TTL/60 for the 1h TTL
	share := (n*int(tick) + int(registrytest.TTL/4) - 1) / int(registrytest.TTL/4)
	var first []string
	for i := range 2 {
		cs.reset()
		got, err := e.Registry.RefreshTick(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if got != share {
			t.Fatalf("tick %d re-signed %d, want its share, %d", i, got, share)
		}
		if cs.listLocal != 0 || cs.getAgent != got || cs.refs != got {
			t.Fatalf("tick %d read %d lists, %d listings, %d refs to re-sign %d", i, cs.listLocal, cs.getAgent, cs.refs, got)
		}
		if i == 0 {
			due, err := cs.Store.LocalRefs(t.Context(), store.LocalQuery{DueBefore: e.Clock.Now().Add(registrytest.TTL / 2), Limit: 1})
			if err != nil || len(due) != 1 {
				t.Fatalf("due after a tick: %v, %v", due, err)
			}
			first = append(first, due[0].Name)
		}
	}
	// What is left due is the later half: the first to expire went first.
	if want := fmt.Sprintf("agent-%06d", share); first[0] != want {
		t.Fatalf("after one tick the first due is %s, want %s", first[0], want)
	}
}

// TestRefreshTickIdle: a tick of a host of 2,000 agents none of which is
// due looks once at the index of expiries, finds nothing and reads
// nothing else: no count of the hosted listings, no ref, no listing.
// Before, every tick counted every hosted listing first.
func TestRefreshTickIdle(t *testing.T) {
	cs := &countingStore{Store: pgtest.Open(t)}
	e := registrytest.New(t, cs)
	hostAgents(t, e, cs.Store, 2000, 40*time.Minute, 60*time.Minute, 0) // none due within TTL/2
	cs.reset()
	got, err := e.Registry.RefreshTick(t.Context())
	if err != nil || got != 0 {
		t.Fatalf("RefreshTick = %d, %v; want nothing re-signed", got, err)
	}
	if cs.counts != 0 || cs.pages != 1 || cs.refs != 0 || cs.getAgent != 0 {
		t.Fatalf("an idle tick made %d counts, read %d pages, %d refs, %d listings; want one empty page and no count", cs.counts, cs.pages, cs.refs, cs.getAgent)
	}
}
