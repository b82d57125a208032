package discover_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// seed stores a listing of a fresh node, as the Sink files one from the
// network.
func seed(t *testing.T, st store.Store, name, display, desc string, tags ...string) store.Listing {
	t.Helper()
	return seedAt(t, st, time.Now(), name, display, desc, tags...)
}

// seedAt is seed of a listing whose row changed at updated.
func seedAt(t *testing.T, st store.Store, updated time.Time, name, display, desc string, tags ...string) store.Listing {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r := agent.Record{
		Name: name, DisplayName: display, Description: desc, Tags: tags, Version: "1.0.0", Seq: 1,
		IssuedAt:  now.Add(-time.Minute),
		Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}},
	}
	r.ExpiresAt = r.IssuedAt.Add(agent.DefaultTTL)
	env, err := agent.Seal(&r, key, now)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := agent.Open(env, now)
	if err != nil {
		t.Fatal(err)
	}
	l := store.Listing{Record: *rec, Envelope: env, Status: store.StatusOnline, LastSeen: now, HostPeerID: rec.HostPeerID(), UpdatedAt: updated}
	if err := st.UpsertRecord(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return l
}

// gatedNet is a DHT whose look-ups wait for release, counting them, the
// bound each was given, and how many ran at once.
type gatedNet struct {
	mu        sync.Mutex
	tags      []string
	providers []int
	deadlines []time.Duration // from the call to its context's deadline
	running   int
	release   chan struct{}
}

func (n *gatedNet) SearchTag(ctx context.Context, tag string, maxProviders int) (int, int, error) {
	n.mu.Lock()
	n.tags = append(n.tags, tag)
	n.providers = append(n.providers, maxProviders)
	if d, ok := ctx.Deadline(); ok {
		n.deadlines = append(n.deadlines, time.Until(d))
	} else {
		n.deadlines = append(n.deadlines, -1)
	}
	n.running++
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		n.running--
		n.mu.Unlock()
	}()
	if n.release != nil {
		select {
		case <-n.release:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
	}
	return 1, 2, nil
}

func (n *gatedNet) calls() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.tags)
}

// TestLookupHasOneSetOfLimits: a round asks at most Limits.Tags tags
// (valid, each once), each for Limits.Providers providers, within the
// deadline asked (at most Limits.MaxDeadline); the node runs at most
// Limits.Rounds rounds at once and refuses one more with ErrBusy, and
// runs none offline.
func TestLookupHasOneSetOfLimits(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Open(t)
	net := &gatedNet{}
	d := discover.New(discover.Deps{Catalogue: st, Network: net, Limits: discover.Limits{Tags: 3, Providers: 5, Rounds: 2, MaxDeadline: time.Minute}})

	round, err := d.Lookup(ctx, discover.Ask{Tags: []string{"Tides", "tides", "Not A Tag!", "weather", "maps", "news", "sport"}, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"tides", "weather", "maps"}; !slices.Equal(round.Tags, want) {
		t.Errorf("round asked for %v; want %v", round.Tags, want)
	}
	if got := slices.Sorted(slices.Values(net.tags)); !slices.Equal(got, []string{"maps", "tides", "weather"}) {
		t.Errorf("the DHT was asked for %v", net.tags)
	}
	for i, p := range net.providers {
		if p != 5 {
			t.Errorf("look-up %d asked for %d providers; want 5", i, p)
		}
		if dl := net.deadlines[i]; dl <= 0 || dl > time.Minute {
			t.Errorf("look-up %d ran with %v left; want at most the MaxDeadline of 1m", i, dl)
		}
	}
	if round.Deadline != time.Minute || round.Providers != 3 || round.Records != 6 || round.Errors != 0 {
		t.Errorf("round = %+v", round)
	}

	// Two rounds at once; a third is refused while they run.
	net.release = make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := d.Lookup(ctx, discover.Ask{Tags: []string{"tides"}}); err != nil {
				t.Errorf("a round within the bound: %v", err)
			}
		})
	}
	waitfor.Until(t, 10*time.Second, "two rounds running", func() bool { return net.calls() == 5 })
	if _, err := d.Lookup(ctx, discover.Ask{Tags: []string{"tides"}}); !errors.Is(err, discover.ErrBusy) {
		t.Errorf("a third round at once: %v; want ErrBusy", err)
	}
	close(net.release)
	wg.Wait()
	if net.calls() != 5 {
		t.Errorf("the refused round asked the DHT (%d look-ups)", net.calls())
	}
	net.release = nil
	if _, err := d.Lookup(ctx, discover.Ask{Tags: []string{"tides"}}); err != nil {
		t.Errorf("a round after the others ended: %v", err)
	}

	offline := discover.New(discover.Deps{Catalogue: st})
	if _, err := offline.Lookup(ctx, discover.Ask{Tags: []string{"tides"}}); !errors.Is(err, discover.ErrNoNetwork) {
		t.Errorf("offline round: %v; want ErrNoNetwork", err)
	}
}

// TestLookupBringsIdentifiersAndMarksThem: a round looks up the ids the
// mirror lacks (never those it holds), and its window marks the listings
// it brought, on its first page and, through the walk cursor, on later
// ones.
func TestLookupBringsIdentifiersAndMarksThem(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Open(t)
	held := seedAt(t, st, time.Now().Add(-time.Hour), "held-bot", "Held", "held here")
	other := store.Listing{}
	finder := finderFunc(func(ctx context.Context, id string) (store.Listing, error) {
		if id == held.Record.ID {
			t.Errorf("looked up %s, which the mirror holds", id)
		}
		other = seed(t, st, "far-bot", "Far", "from the DHT")
		return other, nil
	})
	d := discover.New(discover.Deps{Catalogue: st, Network: &gatedNet{}, Finder: finder})
	round, err := d.Lookup(ctx, discover.Ask{IDs: []string{held.Record.ID, "missing"}})
	if err != nil || round.Records != 1 || round.Identifiers != 2 {
		t.Fatalf("round = %+v, %v", round, err)
	}
	got, err := d.Mirrored(ctx, other.Record.ID)
	if err != nil || got == nil {
		t.Fatalf("the listing the round brought is not in the mirror: %v", err)
	}
	if !round.Brought(*got) || round.Brought(held) {
		t.Errorf("brought: %v (far), %v (held); want true, false", round.Brought(*got), round.Brought(held))
	}
	page, err := d.Search(ctx, store.SearchQuery{Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("page: %+v %v", page, err)
	}
	cur := discover.WalkCursor(page.NextCursor, round.Started, round.Ended)
	next, w, err := discover.ParseWalkCursor(cur)
	if err != nil || next != page.NextCursor || w == nil || !w.Brought(*got) || w.Brought(held) {
		t.Errorf("walk cursor %q: %q %+v %v", cur, next, w, err)
	}
	if _, _, err := discover.ParseWalkCursor("fed.bm9wZQ"); !errors.Is(err, discover.ErrBadWalkCursor) {
		t.Errorf("a made-up walk cursor: %v", err)
	}
}

type finderFunc func(ctx context.Context, id string) (store.Listing, error)

func (f finderFunc) Find(ctx context.Context, id string) (store.Listing, error) { return f(ctx, id) }

// TestFindMergesASentencesWords: a sentence whose words together match
// nothing finds the agents of its words, each once, at most n; one whose
// words match together finds those alone; a tag narrows every search.
func TestFindMergesASentencesWords(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.Open(t)
	tide := seed(t, st, "tide-bot", "Tide tables", "tides for any port", "sea")
	weather := seed(t, st, "weather-bot", "Weather", "forecasts and tides", "sky")
	for i := range 3 {
		seed(t, st, fmt.Sprintf("echo-%d", i), fmt.Sprintf("Echo %d", i), "says it back")
	}
	d := discover.New(discover.Deps{Catalogue: st})
	ids := func(ls []store.Listing) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Record.ID)
		}
		slices.Sort(out)
		return out
	}
	want := ids([]store.Listing{tide, weather})

	got, err := d.Find(ctx, "I need the tides, or the forecasts please!", "", 0)
	if err != nil || !slices.Equal(ids(got), want) {
		t.Errorf("Find(sentence) = %v, %v; want %v", ids(got), err, want)
	}
	got, err = d.Find(ctx, "forecasts tides", "", 0)
	if err != nil || len(got) != 1 || got[0].Record.ID != weather.Record.ID {
		t.Errorf("Find(words found together) = %v, %v; want only the weather bot", ids(got), err)
	}
	got, err = d.Find(ctx, "tides please", "sea", 0)
	if err != nil || len(got) != 1 || got[0].Record.ID != tide.Record.ID {
		t.Errorf("Find(tag sea) = %v, %v; want only the tide bot", ids(got), err)
	}
	got, err = d.Find(ctx, "echo", "", 2)
	if err != nil || len(got) != 2 {
		t.Errorf("Find(n 2) = %d listings, %v", len(got), err)
	}
}
