package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// localCases hold the engines to store.Locals: what a host's timers read
// of its own listings, a page or a count at a time, never all of them
// in full (a host of 100k agents timed out doing that).
var localCases = []testCase{
	{"LocalRefsByID", testLocalRefsByID},
	{"LocalRefsDue", testLocalRefsDue},
	{"CountLocal", testCountLocal},
}

// localFixture stores n local listings of p expiring a minute apart
// (local-000 first), a backend for the even ones, and beside them a
// remote listing, a local tombstone and a local listing of another
// replica (other), both due.
func localFixture(t *testing.T, s store.Store, p, other *publisher, n int, at time.Time) []store.Listing {
	t.Helper()
	local := func(l store.Listing) store.Listing { l.Local = true; return l }
	var ls []store.Listing
	for i := range n {
		l := local(p.listing(t, at, agent.Record{Name: fmt.Sprintf("local-%03d", i), Seq: uint64(10 + i),
			IssuedAt: at, ExpiresAt: at.Add(time.Duration(i+1) * time.Minute)}))
		ls = append(ls, l)
		mustUpsert(t, s, l)
		if i%2 == 0 {
			if err := s.PutBackend(testContext(t), l.Record.ID, agent.Backend{Kind: agent.BackendWebhook, URL: "https://hook.example.org/"}); err != nil {
				t.Fatalf("PutBackend: %v", err)
			}
		}
	}
	mustUpsert(t, s,
		p.listing(t, at, agent.Record{Name: "remote", IssuedAt: at, ExpiresAt: at.Add(time.Second)}),
		local(p.listing(t, at, agent.Record{Name: "local-tomb", Seq: 1, IssuedAt: at, ExpiresAt: at.Add(time.Second)})),
		local(p.listing(t, at, agent.Record{Name: "local-tomb", Seq: 2, Tombstone: true, IssuedAt: at, ExpiresAt: at.Add(time.Second)})),
		local(other.listing(t, at, agent.Record{Name: "replica", IssuedAt: at, ExpiresAt: at.Add(time.Second)})),
	)
	return ls
}

func testLocalRefsByID(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p, other := newPublisher(t), newPublisher(t)
	ls := localFixture(t, s, p, other, 7, at)
	want := map[string]store.Listing{}
	for _, l := range ls {
		want[l.Record.ID] = l
	}
	var got []store.LocalRef
	q := store.LocalQuery{Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("LocalRefs does not end")
		}
		page, err := s.LocalRefs(ctx, q)
		if err != nil {
			t.Fatalf("LocalRefs: %v", err)
		}
		if len(page) > 3 {
			t.Fatalf("a page of %d refs, limit 3", len(page))
		}
		got = append(got, page...)
		if len(page) < 3 {
			break
		}
		q.After = page[len(page)-1].ID
	}
	if !slices.IsSortedFunc(got, func(a, b store.LocalRef) int { return compareStrings(a.ID, b.ID) }) {
		t.Errorf("refs not in id order")
	}
	if len(got) != 8 { // 7 of p, the replica's; not the remote one or the tombstone
		t.Fatalf("%d refs, want 8: %+v", len(got), got)
	}
	for _, r := range got {
		l, ok := want[r.ID]
		if !ok {
			if r.Name != "replica" || r.Publisher != other.peer {
				t.Errorf("unexpected ref %+v", r)
			}
			continue
		}
		wantKind := ""
		if n := l.Record.Name; (n[len(n)-1]-'0')%2 == 0 {
			wantKind = agent.BackendWebhook
		}
		if r.Name != l.Record.Name || r.Publisher != p.peer || r.Seq != l.Record.Seq || !r.ExpiresAt.Equal(l.Record.ExpiresAt) || r.Kind != wantKind {
			t.Errorf("ref %+v, want the listing's %s seq %d expiring %v, kind %q", r, l.Record.Name, l.Record.Seq, l.Record.ExpiresAt, wantKind)
		}
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testLocalRefsDue(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	p, other := newPublisher(t), newPublisher(t)
	localFixture(t, s, p, other, 7, at)
	// Due before 4m30s: local-000 .. local-003, then page by page.
	q := store.LocalQuery{DueBefore: at.Add(4*time.Minute + 30*time.Second), Publisher: p.peer, Limit: 3}
	var names []string
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("LocalRefs does not end")
		}
		page, err := s.LocalRefs(ctx, q)
		if err != nil {
			t.Fatalf("LocalRefs: %v", err)
		}
		for _, r := range page {
			names = append(names, r.Name)
		}
		if len(page) < 3 {
			break
		}
		q.After, q.AfterExpiry = page[len(page)-1].ID, page[len(page)-1].ExpiresAt
	}
	if fmt.Sprint(names) != "[local-000 local-001 local-002 local-003]" {
		t.Fatalf("due refs %v, want local-000..003, first to expire first", names)
	}
	// Without a publisher, the other replica's due listing is there too.
	all, err := s.LocalRefs(ctx, store.LocalQuery{DueBefore: at.Add(90 * time.Second)})
	if err != nil {
		t.Fatalf("LocalRefs: %v", err)
	}
	names = names[:0]
	for _, r := range all {
		names = append(names, r.Name)
	}
	if fmt.Sprint(names) != "[replica local-000]" {
		t.Fatalf("due refs of any publisher %v, want [replica local-000]", names)
	}
}

func testCountLocal(t *testing.T, s store.Store) {
	ctx := testContext(t)
	c, err := s.CountLocal(ctx)
	if err != nil || c.N != 0 {
		t.Fatalf("CountLocal of an empty store = %+v, %v", c, err)
	}
	at := now()
	p, other := newPublisher(t), newPublisher(t)
	ls := localFixture(t, s, p, other, 5, at)
	c, err = s.CountLocal(ctx)
	if err != nil || c.N != 6 {
		t.Fatalf("CountLocal = %+v, %v; want 6 (5 and the replica's)", c, err)
	}
	// A re-signed listing is the same set: the digest stays.
	re := p.listing(t, at, agent.Record{Name: ls[0].Record.Name, Seq: ls[0].Record.Seq + 100})
	re.Local = true
	mustUpsert(t, s, re)
	if c2, err := s.CountLocal(ctx); err != nil || c2 != c {
		t.Fatalf("after a re-sign CountLocal = %+v, %v; want %+v", c2, err, c)
	}
	// A deleted one leaves the set.
	tomb := p.listing(t, at, agent.Record{Name: ls[1].Record.Name, Seq: ls[1].Record.Seq + 1, Tombstone: true})
	tomb.Local = true
	mustUpsert(t, s, tomb)
	c3, err := s.CountLocal(ctx)
	if err != nil || c3.N != 5 || c3.Digest == c.Digest {
		t.Fatalf("after a delete CountLocal = %+v, %v; want 5 and a new digest (was %+v)", c3, err, c)
	}
}
