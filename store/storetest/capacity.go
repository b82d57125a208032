package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// capacityCases are the node's capacity (--max-listings): at it
// a new network listing evicts, never-heard hosts' listings first, then
// offline ones, then stale ones, never this node's own nor online ones;
// with nothing to evict it is refused and nothing held is lost; an evicted
// listing leaves search and the change feed says so; a listing evicted or
// refused is taken again once there is room.
var capacityCases = []testCase{
	{"CapacityEvictionOrder", testCapacityEvictionOrder},
	{"CapacityBatch", testCapacityBatch},
	{"CapacitySyncFeed", testCapacitySyncFeed},
	{"CapacityPage", testCapacityPage},
	{"CapacityWholePage", testCapacityWholePage},
}

func evictor(t *testing.T, s store.Store) store.Evictor {
	t.Helper()
	e, ok := s.(store.Evictor)
	if !ok {
		t.Fatalf("%T does not implement store.Evictor", s)
	}
	return e
}

// capacityFixture is a Sink with a Capacity on s, its clock at *at.
type capacityFixture struct {
	t    *testing.T
	s    store.Store
	sink *store.Sink
	cap  *store.Capacity
	at   time.Time
	recs map[string]*agent.Record
	envs map[string][]byte
}

func newCapacityFixture(t *testing.T, s store.Store, self *publisher, max, headroom int) *capacityFixture {
	f := &capacityFixture{t: t, s: s, at: now(), recs: map[string]*agent.Record{}, envs: map[string][]byte{}}
	clock := func() time.Time { return f.at }
	f.cap = &store.Capacity{Store: evictor(t, s), Max: max, Headroom: headroom, Now: clock}
	f.sink = &store.Sink{Store: s, SelfID: self.peer, Now: clock, Capacity: f.cap}
	return f
}

// put seals a listing of p named name (once; later calls send the same
// envelope again) and hands it to the Sink.
func (f *capacityFixture) put(p *publisher, name string) error {
	f.t.Helper()
	f.at = f.at.Add(time.Microsecond) // past Recount: every Admit counts
	rec, ok := f.recs[name]
	if !ok {
		var env []byte
		rec, env = p.seal(f.t, f.at, agent.Record{Name: name, Description: "capacity " + name, Tags: []string{"cap"}})
		f.recs[name], f.envs[name] = rec, env
	}
	_, err := f.sink.Put(testContext(f.t), rec, f.envs[name])
	return err
}

func (f *capacityFixture) mustPut(p *publisher, name string) {
	f.t.Helper()
	if err := f.put(p, name); err != nil {
		f.t.Fatalf("Put %s: %v", name, err)
	}
}

// held is the names of the fixture's listings that the store holds, and
// that a search for their common word finds (the search index, when the
// suite runs behind it).
func (f *capacityFixture) wantHeld(what string, want ...string) {
	f.t.Helper()
	ctx := testContext(f.t)
	var got []string
	for name, rec := range f.recs {
		ok, err := f.s.HasAgent(ctx, rec.ID)
		if err != nil {
			f.t.Fatalf("HasAgent: %v", err)
		}
		if ok {
			got = append(got, name)
		}
		if _, err := f.s.GetAgent(ctx, rec.ID); ok != (err == nil) || (err != nil && !errors.Is(err, store.ErrNotFound)) {
			f.t.Errorf("%s: GetAgent(%s) = %v, HasAgent %v", what, name, err, ok)
		}
	}
	if g, w := sorted(got), sorted(want); !slices.Equal(g, w) {
		f.t.Errorf("%s: held %v, want %v", what, g, w)
	}
	page := mustSearch(f.t, f.s, store.SearchQuery{Q: "capacity", Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline}, Limit: store.MaxLimit})
	wantNameSet(f.t, what+": search", page.Listings, want...)
	tagged := mustSearch(f.t, f.s, store.SearchQuery{Tags: []string{"cap"}, Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline}, Limit: store.MaxLimit})
	wantNameSet(f.t, what+": tag search", tagged.Listings, want...)
	counts, err := f.s.CountByStatus(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != len(want) {
		f.t.Errorf("%s: CountByStatus %v, %d in all, want %d", what, counts, total, len(want))
	}
	if n, err := evictor(f.t, f.s).CountListings(ctx); err != nil || n != len(want) {
		f.t.Errorf("%s: CountListings = %d, %v, want %d", what, n, err, len(want))
	}
}

// testCapacityEvictionOrder: at a capacity of 6, with this node's own two
// listings, an online one, a stale one and an offline one of hosts heard,
// and a stale one of a host never heard (stored last), new listings evict
// the never-heard one, then the offline one, then the stale one; then one
// is refused (ErrCatalogueFull) and nothing held goes. This node's own
// listings enter beyond the capacity. Once listings go offline there is
// room again: the refused listing and an evicted one are taken, and the
// change feed numbers each eviction as a tombstone.
func testCapacityEvictionOrder(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self, online, silent, gone, unheard := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	f := newCapacityFixture(t, s, self, 6, 1)
	f.cap.Recount = time.Microsecond // this node's own listings are counted at once
	for _, p := range []*publisher{online, silent, gone} {
		if err := f.sink.NodeSeen(ctx, heartbeat(p, f.at, 1)); err != nil {
			t.Fatal(err)
		}
	}
	f.mustPut(self, "own-1")
	f.mustPut(online, "online-1")
	f.mustPut(silent, "stale-1")
	f.mustPut(gone, "offline-1")
	f.mustPut(self, "own-2")
	f.mustPut(unheard, "unheard-1")
	if _, err := s.SetHostStatus(ctx, silent.peer, store.StatusStale, f.at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetHostStatus(ctx, gone.peer, store.StatusOffline, f.at); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "a listing of a host never heard", f.recs["unheard-1"].ID, store.StatusStale)
	wantStatus(t, s, "a listing of a silent host", f.recs["stale-1"].ID, store.StatusStale)
	wantStatus(t, s, "a listing of a host gone", f.recs["offline-1"].ID, store.StatusOffline)
	all := []string{"own-1", "own-2", "online-1", "stale-1", "offline-1", "unheard-1"}
	f.wantHeld("at capacity", all...)

	feed, isFeed := s.(store.ChangeFeed)
	posOf := map[string]int64{}
	var head int64
	if isFeed {
		for _, d := range mustChanges(t, feed, 0, nil, 100) {
			posOf[d.Name] = d.Pos
			head = max(head, d.ChangeSeq)
		}
	}

	f.mustPut(online, "new-1")
	f.wantHeld("the first new listing evicts the never-heard host's", "own-1", "own-2", "online-1", "stale-1", "offline-1", "new-1")
	f.mustPut(online, "new-2")
	f.wantHeld("the second evicts the offline one", "own-1", "own-2", "online-1", "stale-1", "new-1", "new-2")
	f.mustPut(online, "new-3")
	held := []string{"own-1", "own-2", "online-1", "new-1", "new-2", "new-3"}
	f.wantHeld("the third evicts the stale one", held...)

	err := f.put(online, "new-4")
	if !errors.Is(err, store.ErrCatalogueFull) {
		t.Fatalf("Put with only own and online listings held = %v, want ErrCatalogueFull", err)
	}
	var full interface{ CatalogueFull() bool }
	if !errors.As(err, &full) || !full.CatalogueFull() {
		t.Errorf("the refusal %v has no CatalogueFull method", err)
	}
	if errors.Is(err, agent.ErrOverQuota) {
		t.Errorf("the refusal %v blames the publisher's quota", err)
	}
	f.wantHeld("refused: nothing held goes", held...)
	if _, err := f.sink.Put(ctx, f.recs["new-1"], f.envs["new-1"]); err != nil {
		t.Errorf("an update of a held listing at capacity: %v", err)
	}
	f.mustPut(self, "own-3")
	held = append(held, "own-3")
	f.wantHeld("this node's own listing enters beyond the capacity", held...)
	if evicted, refused := f.cap.Counts(); evicted != 3 || refused != 1 {
		t.Errorf("Counts = %d evicted, %d refused, want 3 and 1", evicted, refused)
	}

	if isFeed {
		docs := mustChanges(t, feed, head, nil, 100)
		tomb := map[int64]bool{}
		for _, d := range docs {
			if d.Tombstone {
				tomb[d.Pos] = true
			}
		}
		for _, name := range []string{"unheard-1", "offline-1", "stale-1"} {
			if !tomb[posOf[name]] {
				t.Errorf("the change feed after %d has no tombstone for evicted %s (pos %d): %+v", head, name, posOf[name], docs)
			}
		}
		wantIncreasing(t, "changes after the evictions", head, docs)
	}

	// Room again: the online host's listings go offline.
	if _, err := s.SetHostStatus(ctx, online.peer, store.StatusOffline, f.at); err != nil {
		t.Fatal(err)
	}
	f.mustPut(online, "new-4") // 7 held (own-3), so two go: online-1, new-1
	f.wantHeld("the refused listing, once there is room", "own-1", "own-2", "own-3", "new-2", "new-3", "new-4")
	f.mustPut(unheard, "unheard-1") // evicted before: taken again, evicting new-2
	f.wantHeld("an evicted listing heard again", "own-1", "own-2", "own-3", "new-3", "new-4", "unheard-1")
}

// testCapacityBatch: at the capacity one eviction frees Headroom
// listings (one statement for a batch of admissions, not one per insert),
// in first-seen order within a class, and this node's own are never among
// them however many are asked for.
func testCapacityBatch(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self, unheard := newPublisher(t), newPublisher(t)
	f := newCapacityFixture(t, s, self, 12, 4)
	f.mustPut(self, "own-1")
	f.mustPut(self, "own-2")
	var names []string
	for i := range 10 {
		name := "u-" + string(rune('a'+i))
		f.mustPut(unheard, name)
		names = append(names, name)
	}
	f.mustPut(unheard, "u-k") // evicts u-a..u-d
	f.wantHeld("one batch of 4", append([]string{"own-1", "own-2", "u-k"}, names[4:]...)...)
	for _, name := range []string{"u-l", "u-m", "u-n"} { // the headroom: nothing evicted
		f.mustPut(unheard, name)
	}
	if evicted, _ := f.cap.Counts(); evicted != 4 {
		t.Errorf("evicted %d, want 4 (one batch)", evicted)
	}
	got, err := evictor(t, s).EvictListings(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if got != 10 {
		t.Errorf("EvictListings(100) with 10 others held = %d", got)
	}
	f.wantHeld("all but this node's own evicted", "own-1", "own-2")
	if got, err := evictor(t, s).EvictListings(ctx, 100); err != nil || got != 0 {
		t.Errorf("EvictListings with only own listings = %d, %v", got, err)
	}
}

// testCapacitySyncFeed: an eviction is no change for peers that sync from
// this node (the listing is not deleted for them), but the sync number
// the evicted listing held is never handed out again: a peer whose
// cursor is at it still gets the listing stored next.
func testCapacitySyncFeed(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self, unheard := newPublisher(t), newPublisher(t)
	f := newCapacityFixture(t, s, self, 0, 0) // no bound: EvictListings by hand
	f.mustPut(self, "own-1")
	f.mustPut(unheard, "last-1")
	later := f.at.Add(time.Second)
	names, head := walkFeed(t, s, 0, "", "", 10, later)
	if g := sorted(names); !slices.Equal(g, []string{"last-1", "own-1"}) {
		t.Fatalf("the feed serves %v", g)
	}
	if n, err := evictor(t, s).EvictListings(ctx, 1); err != nil || n != 1 {
		t.Fatalf("EvictListings(1) = %d, %v", n, err)
	}
	if names, _ := walkFeed(t, s, head, "", "", 10, later); len(names) != 0 {
		t.Errorf("after the eviction, the feed after %d serves %v, want nothing", head, names)
	}
	f.mustPut(unheard, "next-1")
	if names, _ := walkFeed(t, s, head, "", "", 10, later.Add(time.Second)); !slices.Equal(names, []string{"next-1"}) {
		t.Errorf("the feed after %d (the evicted listing's number) serves %v, want [next-1]", head, names)
	}
}

// testCapacityPage: a sync page (Sink.PutAll) at the capacity makes room
// as Put does, record by record, and refuses what does not fit alone.
func testCapacityPage(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self, heard, unheard := newPublisher(t), newPublisher(t), newPublisher(t)
	f := newCapacityFixture(t, s, self, 4, 1)
	if err := f.sink.NodeSeen(ctx, heartbeat(heard, f.at, 1)); err != nil {
		t.Fatal(err)
	}
	f.mustPut(self, "own-1")
	f.mustPut(heard, "online-1")
	f.mustPut(unheard, "unheard-1")
	f.mustPut(unheard, "unheard-2")
	var recs []*agent.Record
	var envs [][]byte
	for _, name := range []string{"page-1", "page-2", "page-3"} {
		rec, env := heard.seal(t, f.at, agent.Record{Name: name, Description: "capacity " + name, Tags: []string{"cap"}})
		f.recs[name], f.envs[name] = rec, env
		recs, envs = append(recs, rec), append(envs, env)
	}
	changed, errs := f.sink.PutAll(ctx, recs, envs)
	for i, name := range []string{"page-1", "page-2"} {
		if errs[i] != nil || !changed[i] {
			t.Errorf("%s: changed %v, err %v; want stored, evicting a never-heard host's", name, changed[i], errs[i])
		}
	}
	if !errors.Is(errs[2], store.ErrCatalogueFull) || changed[2] {
		t.Errorf("page-3: changed %v, err %v; want ErrCatalogueFull", changed[2], errs[2])
	}
	f.wantHeld("after the page", "own-1", "online-1", "page-1", "page-2")
}

// testCapacityWholePage: a page of 64 new listings with room for 3 stores
// 3 and refuses 61 (the page's records compete with what is held, not
// with each other, though a page is written in one transaction after it
// is judged); the next page's 3 first evict the first page's.
func testCapacityWholePage(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self := newPublisher(t)
	f := newCapacityFixture(t, s, self, 10, 0)
	for i := range 7 {
		f.mustPut(self, fmt.Sprintf("own-%d", i))
	}
	var firsts []string
	for page := range 2 {
		var recs []*agent.Record
		var envs [][]byte
		for i := range 64 {
			name := fmt.Sprintf("page%d-%02d", page, i)
			rec, env := newPublisher(t).seal(t, f.at, agent.Record{Name: name, Description: "capacity " + name, Tags: []string{"cap"}})
			f.recs[name], f.envs[name] = rec, env
			recs, envs = append(recs, rec), append(envs, env)
		}
		changed, errs := f.sink.PutAll(ctx, recs, envs)
		var stored []string
		for i, rec := range recs {
			if !changed[i] && !errors.Is(errs[i], store.ErrCatalogueFull) {
				t.Errorf("page %d: %s neither stored nor refused for capacity: %v", page, rec.Name, errs[i])
			}
			ok, err := s.HasAgent(ctx, rec.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				stored = append(stored, rec.Name)
			}
		}
		// (A store without transactions takes the page record by record:
		// each then evicts the one before, and 3 are left.)
		if len(stored) != 3 {
			t.Fatalf("page %d: %d held (%v), want 3", page, len(stored), stored)
		}
		f.wantHeld(fmt.Sprintf("after page %d", page), append([]string{"own-0", "own-1", "own-2", "own-3", "own-4", "own-5", "own-6"}, stored...)...)
		if _, ok := s.(store.Batcher); !ok {
			return
		}
		if page == 0 {
			firsts = stored
		}
	}
	if evicted, refused := f.cap.Counts(); evicted != uint64(len(firsts)) || refused != 2*61 {
		t.Errorf("Counts = %d evicted, %d refused, want 3 and 122", evicted, refused)
	}
}

// BenchmarkEviction measures EvictListings(1000) on a catalogue of 100k
// realistic listings (benchListings: 80 % online, 10 % stale, 10 %
// offline, 64 publishers, half of them heard: their stale listings are
// class 3, the others' class 1), and the same call once nothing may be
// evicted (what a refused listing costs at the capacity):
//
//	go test -run XXX -bench Eviction -benchtime 10x ./store/sqlite/
func BenchmarkEviction(b *testing.B, open func(b *testing.B) store.Store) {
	s := open(b)
	ctx := b.Context()
	ls := benchListings(b, 100_000)
	seedStore(b, s, ls)
	hosts := map[string]bool{}
	for _, l := range ls {
		if len(hosts) < 32 {
			hosts[l.HostPeerID] = true
		}
	}
	for h := range hosts {
		if err := s.UpsertNode(ctx, store.Node{PeerID: h, LastHeartbeat: now(), Status: store.StatusOnline}); err != nil {
			b.Fatal(err)
		}
	}
	ev := s.(store.Evictor)
	b.Run("1000", func(b *testing.B) {
		evicted := 0
		for b.Loop() {
			n, err := ev.EvictListings(ctx, 1000)
			if err != nil {
				b.Fatal(err)
			}
			if n != 1000 {
				b.Fatalf("evicted %d of 1000 after %d: run fewer iterations (-benchtime 10x)", n, evicted)
			}
			evicted += n
		}
	})
	for {
		n, err := ev.EvictListings(ctx, store.MaxEvictBatch)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	b.Run("nothing", func(b *testing.B) {
		for b.Loop() {
			if n, err := ev.EvictListings(ctx, 1000); err != nil || n != 0 {
				b.Fatalf("EvictListings = %d, %v", n, err)
			}
		}
	})
}
