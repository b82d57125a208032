package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// evidenceCases are quotas and eviction that weigh evidence
// (docs/architecture.md "Listings held"): a node row keeps when this node
// began hearing the node; a heard publisher's quota grows with that, up to
// what its heartbeats claim and the capacity; at the capacity a new
// listing evicts only stale listings of hosts heard no longer than its own.
var evidenceCases = []testCase{
	{"NodeFirstHeard", testNodeFirstHeard},
	{"QuotaGrowsWithEvidence", testQuotaGrowsWithEvidence},
	{"EvictionWeighsEvidence", testEvictionWeighsEvidence},
	{"VerifiedDomainQuota", testVerifiedDomainQuota},
	{"VerifiedDomainOutranks", testVerifiedDomainOutranks},
}

func firstHeardOf(t *testing.T, s store.Store, peer string) time.Time {
	t.Helper()
	nodes, err := s.GetNodes(testContext(t), []string{peer})
	if err != nil || len(nodes) != 1 {
		t.Fatalf("GetNodes(%s) = %v, %v", peer, nodes, err)
	}
	page, err := s.ListNodes(testContext(t), store.NodeQuery{Limit: store.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range page.Nodes {
		if n.PeerID == peer && !n.FirstHeard.Equal(nodes[0].FirstHeard) {
			t.Errorf("ListNodes says %s was first heard at %v, GetNodes %v", peer, n.FirstHeard, nodes[0].FirstHeard)
		}
	}
	return nodes[0].FirstHeard
}

// testNodeFirstHeard: a node's first heartbeat sets when it was first
// heard; later heartbeats, and turning stale, keep it; a node heard again
// after it was offline starts again.
func testNodeFirstHeard(t *testing.T, s store.Store) {
	ctx := testContext(t)
	p := newPublisher(t)
	t0 := now()
	node := store.Node{PeerID: p.peer, Version: "test", LastHeartbeat: t0, FirstHeard: t0, Status: store.StatusOnline}
	if err := s.UpsertNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	if got := firstHeardOf(t, s, p.peer); !got.Equal(t0) {
		t.Fatalf("first heard %v, want %v", got, t0)
	}
	for i, status := range []string{store.StatusOnline, store.StatusStale, store.StatusOnline, store.StatusStale, store.StatusOffline} {
		later := t0.Add(time.Duration(i+1) * time.Minute)
		node.LastHeartbeat, node.FirstHeard, node.Status = later, later, status
		if err := s.UpsertNode(ctx, node); err != nil {
			t.Fatal(err)
		}
		if got := firstHeardOf(t, s, p.peer); !got.Equal(t0) {
			t.Fatalf("after a heartbeat %s at %v: first heard %v, want %v", status, later, got, t0)
		}
	}
	back := t0.Add(time.Hour)
	node.LastHeartbeat, node.FirstHeard, node.Status = back, back, store.StatusOnline
	if err := s.UpsertNode(ctx, node); err != nil {
		t.Fatal(err)
	}
	if got := firstHeardOf(t, s, p.peer); !got.Equal(back) {
		t.Errorf("heard again after offline: first heard %v, want %v", got, back)
	}
	// A row written without one (an older caller) counts from its heartbeat.
	q := newPublisher(t)
	if err := s.UpsertNode(ctx, store.Node{PeerID: q.peer, LastHeartbeat: t0, Status: store.StatusOnline}); err != nil {
		t.Fatal(err)
	}
	if got := firstHeardOf(t, s, q.peer); !got.Equal(t0) {
		t.Errorf("a row without FirstHeard: first heard %v, want its heartbeat %v", got, t0)
	}
}

// testQuotaGrowsWithEvidence: a publisher never heard holds
// MaxPerPublisher; one heard starts there, doubles every QuotaDoubling
// heard, and stops at what its heartbeat claims (and a tenth more) and at
// the capacity; one gone offline is back to MaxPerPublisher. Put and a
// page (PutAll) judge alike, and the refusals are reported by publisher.
func testQuotaGrowsWithEvidence(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	self, heard, unheard := newPublisher(t), newPublisher(t), newPublisher(t)
	var logged bytes.Buffer
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return at }, MaxPerPublisher: 3, QuotaDoubling: time.Minute,
		Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	n := 0
	put := func(p *publisher) error {
		t.Helper()
		n++
		rec, env := p.seal(t, at, agent.Record{Name: fmt.Sprintf("evidence-%d", n)})
		_, err := sink.Put(ctx, rec, env)
		return err
	}
	// fill puts listings of p until one is refused, and returns how many
	// went in.
	fill := func(p *publisher) int {
		t.Helper()
		for i := 0; ; i++ {
			err := put(p)
			if errors.Is(err, agent.ErrOverQuota) {
				return i
			}
			if err != nil {
				t.Fatal(err)
			}
			if i > 100 {
				t.Fatalf("more than 100 listings of %s taken", p.peer)
			}
		}
	}
	if err := sink.NodeSeen(ctx, heartbeat(heard, at, 20)); err != nil {
		t.Fatal(err)
	}
	if got := fill(heard); got != 3 {
		t.Errorf("a publisher heard just now took %d listings, want MaxPerPublisher 3", got)
	}
	if got := fill(unheard); got != 3 {
		t.Errorf("a publisher never heard took %d listings, want 3", got)
	}
	at = at.Add(time.Minute)
	if got := fill(heard); got != 3 {
		t.Errorf("heard for one doubling: %d more taken, want 3 (6 in all)", got)
	}
	at = at.Add(2 * time.Minute) // 24 earned, the claim of 20 and a tenth more: 22
	var recs []*agent.Record
	var envs [][]byte
	for i := range 20 {
		rec, env := heard.seal(t, at, agent.Record{Name: fmt.Sprintf("evidence-page-%d", i)})
		recs, envs = append(recs, rec), append(envs, env)
	}
	_, errs := sink.PutAll(ctx, recs, envs)
	taken := 0
	for i, err := range errs {
		switch {
		case err == nil:
			taken++
		case !errors.Is(err, agent.ErrOverQuota):
			t.Fatalf("page record %d: %v", i, err)
		}
	}
	if taken != 16 {
		t.Errorf("a page of 20 with 6 held and the claim's 22 allowed: %d taken, want 16", taken)
	}
	if got := fill(unheard); got != 0 {
		t.Errorf("a publisher never heard, later: %d more taken, want 0", got)
	}
	refusals := map[string]store.PublisherRefusal{}
	for _, r := range sink.QuotaRefusals() {
		refusals[r.Publisher] = r
	}
	if r := refusals[heard.peer]; r.Refused < 4 || r.Limit != 22 || !r.Heard {
		t.Errorf("refusals of the heard publisher: %+v, want at least 4 at a limit of 22, heard", r)
	}
	if r := refusals[unheard.peer]; r.Refused != 2 || r.Limit != 3 || r.Heard {
		t.Errorf("refusals of the never-heard publisher: %+v, want 2 at a limit of 3, not heard", r)
	}
	// The log names each publisher once a minute, not once a record: the
	// heard one at 0, 1 and 3 minutes, the other at 0 and 3, each with
	// the flag that raises its quota.
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	for p, want := range map[string]int{heard.peer: 3, unheard.peer: 2} {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, p) {
				n++
				if !strings.Contains(l, "--max-listings-per-publisher") {
					t.Errorf("a refusal logged without the flag that raises it: %s", l)
				}
			}
		}
		if n != want {
			t.Errorf("the log names publisher %s %d times, want %d:\n%s", p, n, want, logged.String())
		}
	}

}

// testEvictionWeighsEvidence: at the capacity, a host heard for long
// that went silent (its listings stale) keeps them against a publisher
// first heard later that heartbeats and floods; a publisher never heard
// cannot evict them either; a host heard for longer than the silent one
// may, and so may anyone once the silent one is offline.
func testEvictionWeighsEvidence(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self, elder, honest, rogue, stranger := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	f := newCapacityFixture(t, s, self, 6, 1)
	t0 := f.at
	if err := f.sink.NodeSeen(ctx, heartbeat(elder, t0, 1)); err != nil {
		t.Fatal(err)
	}
	f.at = t0.Add(10 * time.Minute)
	if err := f.sink.NodeSeen(ctx, heartbeat(honest, f.at, 4)); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		f.mustPut(honest, fmt.Sprintf("honest-%d", i))
	}
	f.mustPut(elder, "elder-0")
	// Twenty minutes later the honest host is cut off: its listings turn
	// stale.
	f.at = t0.Add(30 * time.Minute)
	if err := f.sink.NodeSeen(ctx, heartbeat(elder, f.at, 1)); err != nil {
		t.Fatal(err)
	}
	if err := f.sink.Sweep(ctx, f.at, time.Minute, 24*time.Hour, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "the cut-off host's listing", f.recs["honest-0"].ID, store.StatusStale)
	honestHeld := []string{"honest-0", "honest-1", "honest-2", "honest-3", "elder-0"}
	// A rogue first heard now heartbeats and floods.
	if err := f.sink.NodeSeen(ctx, heartbeat(rogue, f.at, 1_000)); err != nil {
		t.Fatal(err)
	}
	f.mustPut(rogue, "rogue-0") // the one free place
	for i := 1; i < 5; i++ {
		if err := f.put(rogue, fmt.Sprintf("rogue-%d", i)); !errors.Is(err, store.ErrCatalogueFull) {
			t.Fatalf("rogue listing %d with only the cut-off host's stale listings to evict: %v, want ErrCatalogueFull", i, err)
		}
	}
	if err := f.put(stranger, "stranger-0"); !errors.Is(err, store.ErrCatalogueFull) {
		t.Fatalf("a never-heard publisher's listing: %v, want ErrCatalogueFull", err)
	}
	for i := range 3 { // a page of the rogue's: refused whole
		rec, env := rogue.seal(t, f.at, agent.Record{Name: fmt.Sprintf("rogue-page-%d", i), Description: "capacity", Tags: []string{"cap"}})
		f.recs[rec.Name], f.envs[rec.Name] = rec, env
	}
	_, errs := f.sink.PutAll(ctx,
		[]*agent.Record{f.recs["rogue-page-0"], f.recs["rogue-page-1"], f.recs["rogue-page-2"]},
		[][]byte{f.envs["rogue-page-0"], f.envs["rogue-page-1"], f.envs["rogue-page-2"]})
	for i, err := range errs {
		if !errors.Is(err, store.ErrCatalogueFull) {
			t.Errorf("rogue page record %d: %v, want ErrCatalogueFull", i, err)
		}
	}
	f.wantHeld("after the flood", append([]string{"rogue-0"}, honestHeld...)...)

	// The elder host (heard before the cut-off one) outranks it.
	f.mustPut(elder, "elder-1")
	f.wantHeld("the elder host's new listing", "rogue-0", "honest-1", "honest-2", "honest-3", "elder-0", "elder-1")

	// The cut-off host is gone for good: its listings may go to anyone
	// heard.
	f.at = t0.Add(40 * time.Minute)
	for _, p := range []*publisher{elder, rogue} {
		if err := f.sink.NodeSeen(ctx, heartbeat(p, f.at, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.sink.Sweep(ctx, f.at, time.Minute, 20*time.Minute, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	f.mustPut(rogue, "rogue-5")
	if ok, err := s.HasAgent(ctx, f.recs["honest-1"].ID); err != nil || ok {
		t.Errorf("the offline host's oldest listing after the rogue's new one: held %v, %v; want evicted", ok, err)
	}
}

// testVerifiedDomainQuota: a publisher whose domain this node proved
// (Sink.Verified) counts as heard for a day. Heard just now, it is
// allowed its claim at once where an unverified one starts at
// MaxPerPublisher; never heard, it has no claim and gets MaxPerPublisher.
func testVerifiedDomainQuota(t *testing.T, s store.Store) {
	ctx := testContext(t)
	at := now()
	self, proved, plain, provedUnheard := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	verified := func(p string) bool { return p == proved.peer || p == provedUnheard.peer }
	sink := &store.Sink{Store: s, SelfID: self.peer, Now: func() time.Time { return at }, MaxPerPublisher: 3, Verified: verified}
	n := 0
	fill := func(p *publisher) int {
		t.Helper()
		for i := 0; ; i++ {
			n++
			rec, env := p.seal(t, at, agent.Record{Name: fmt.Sprintf("verified-%d", n)})
			_, err := sink.Put(ctx, rec, env)
			if errors.Is(err, agent.ErrOverQuota) {
				return i
			}
			if err != nil {
				t.Fatal(err)
			}
			if i > 100 {
				t.Fatalf("more than 100 listings of %s taken", p.peer)
			}
		}
	}
	for _, p := range []*publisher{proved, plain} {
		if err := sink.NodeSeen(ctx, heartbeat(p, at, 20)); err != nil {
			t.Fatal(err)
		}
	}
	if got := fill(proved); got != 22 {
		t.Errorf("a verified publisher heard just now, claiming 20: %d taken, want 22 (its claim and a tenth)", got)
	}
	if got := fill(plain); got != 3 {
		t.Errorf("an unverified publisher heard just now: %d taken, want MaxPerPublisher 3", got)
	}
	if got := fill(provedUnheard); got != 3 {
		t.Errorf("a verified publisher never heard (no claim): %d taken, want 3", got)
	}
}

// testVerifiedDomainOutranks: at the capacity, the listings of a verified
// publisher heard just now outrank the stale ones of a host heard for half
// an hour, which a publisher heard as briefly but unverified cannot evict.
func testVerifiedDomainOutranks(t *testing.T, s store.Store) {
	ctx := testContext(t)
	self, elder, rogue, domain := newPublisher(t), newPublisher(t), newPublisher(t), newPublisher(t)
	f := newCapacityFixture(t, s, self, 3, 1)
	f.sink.Verified = func(p string) bool { return p == domain.peer }
	t0 := f.at
	if err := f.sink.NodeSeen(ctx, heartbeat(elder, t0, 3)); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		f.mustPut(elder, fmt.Sprintf("elder-%d", i))
	}
	f.at = t0.Add(30 * time.Minute)
	for _, p := range []*publisher{rogue, domain} {
		if err := f.sink.NodeSeen(ctx, heartbeat(p, f.at, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.sink.Sweep(ctx, f.at, time.Minute, 24*time.Hour, 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, s, "the cut-off host's listing", f.recs["elder-0"].ID, store.StatusStale)
	if err := f.put(rogue, "rogue-0"); !errors.Is(err, store.ErrCatalogueFull) {
		t.Fatalf("an unverified publisher heard just now: %v, want ErrCatalogueFull", err)
	}
	f.mustPut(domain, "domain-0")
	f.wantHeld("after the verified publisher's listing", "elder-1", "elder-2", "domain-0")
}
