package storetest

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// testTimeout bounds every subtest's store calls.
const testTimeout = 60 * time.Second

// testContext is t.Context with a deadline, so a hung engine fails the
// test instead of the whole run.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// now is the suite's clock reading, cut to microseconds (see the package
// doc).
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// publisher signs records as a node does.
type publisher struct {
	key  crypto.PrivKey
	peer string
}

// newPublisher makes a publisher with a fresh Ed25519 key.
func newPublisher(t testing.TB) *publisher {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	id, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatalf("peer id: %v", err)
	}
	return &publisher{key: key, peer: id.String()}
}

// seal completes tmpl (endpoints hosted by the publisher, version, seq 1,
// issued a minute before at, valid for an hour, unless set), signs it and
// opens the envelope again, returning what a receiving node would have.
func (p *publisher) seal(t testing.TB, at time.Time, tmpl agent.Record) (*agent.Record, []byte) {
	t.Helper()
	rec, env, err := p.trySeal(at, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return rec, env
}

// trySeal is seal for goroutines other than the test's.
func (p *publisher) trySeal(at time.Time, tmpl agent.Record) (*agent.Record, []byte, error) {
	r := tmpl
	if r.DisplayName == "" {
		r.DisplayName = r.Name
	}
	if r.Version == "" {
		r.Version = "1.0.0"
	}
	if r.Seq == 0 {
		r.Seq = 1
	}
	if r.IssuedAt.IsZero() {
		r.IssuedAt = at.Add(-time.Minute)
	}
	if r.ExpiresAt.IsZero() {
		r.ExpiresAt = r.IssuedAt.Add(agent.DefaultTTL)
	}
	if r.Endpoints == nil {
		r.Endpoints = []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: p.peer, Protocol: agent.MCPProtocol}}
	}
	env, err := agent.Seal(&r, p.key, at)
	if err != nil {
		return nil, nil, fmt.Errorf("seal %s: %w", r.Name, err)
	}
	rec, err := agent.Open(env, at)
	if err != nil {
		return nil, nil, fmt.Errorf("open %s: %w", r.Name, err)
	}
	return rec, env, nil
}

// listing seals tmpl and makes the listing the Sink would store: online,
// seen at, not local. Callers adjust the rest.
func (p *publisher) listing(t testing.TB, at time.Time, tmpl agent.Record) store.Listing {
	t.Helper()
	rec, env := p.seal(t, at, tmpl)
	return newListing(rec, env, at)
}

func newListing(rec *agent.Record, env []byte, at time.Time) store.Listing {
	return store.Listing{
		Record:     *rec,
		Envelope:   env,
		Status:     store.StatusOnline,
		LastSeen:   at,
		HostPeerID: rec.HostPeerID(),
		UpdatedAt:  at,
	}
}

// withStatus returns l with another status.
func withStatus(l store.Listing, status string) store.Listing {
	l.Status = status
	return l
}

func mustUpsert(t testing.TB, s store.Store, ls ...store.Listing) {
	t.Helper()
	for _, l := range ls {
		if err := s.UpsertRecord(testContext(t), l); err != nil {
			t.Fatalf("UpsertRecord(%s seq %d): %v", l.Record.Name, l.Record.Seq, err)
		}
	}
}

func mustGet(t testing.TB, s store.Store, id string) store.Listing {
	t.Helper()
	l, err := s.GetAgent(testContext(t), id)
	if err != nil {
		t.Fatalf("GetAgent(%s): %v", id, err)
	}
	return l
}

func mustSearch(t testing.TB, s store.Store, q store.SearchQuery) store.SearchPage {
	t.Helper()
	page, err := s.SearchAgents(testContext(t), q)
	if err != nil {
		t.Fatalf("SearchAgents(%+v): %v", q, err)
	}
	return page
}

// names lists the record names of ls, in order.
func names(ls []store.Listing) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Record.Name
	}
	return out
}

// sorted returns a sorted copy.
func sorted(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// wantNames checks the names of ls, in order.
func wantNames(t testing.TB, what string, ls []store.Listing, want ...string) {
	t.Helper()
	if got := names(ls); !slices.Equal(got, want) {
		t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// wantNameSet checks the names of ls, in any order.
func wantNameSet(t testing.TB, what string, ls []store.Listing, want ...string) {
	t.Helper()
	if got := sorted(names(ls)); !slices.Equal(got, sorted(want)) {
		t.Errorf("%s: got %q, want (any order) %q", what, got, sorted(want))
	}
}

// wantUTC checks a time the store returned is in UTC.
func wantUTC(t testing.TB, what string, tm time.Time) {
	t.Helper()
	if !tm.IsZero() && tm.Location() != time.UTC {
		t.Errorf("%s: location %v, want UTC", what, tm.Location())
	}
}

// wantTime checks a time the store returned: same instant, in UTC.
func wantTime(t testing.TB, what string, got, want time.Time) {
	t.Helper()
	if !got.Equal(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
	wantUTC(t, what, got)
}

// canonRecord makes records comparable with reflect.DeepEqual: times by
// instant, nil and empty slices alike.
func canonRecord(r agent.Record) agent.Record {
	canonTime := func(t time.Time) time.Time { return time.Unix(0, t.UnixNano()).UTC() }
	r.IssuedAt, r.ExpiresAt = canonTime(r.IssuedAt), canonTime(r.ExpiresAt)
	if len(r.Tags) == 0 {
		r.Tags = nil
	}
	if len(r.Endpoints) == 0 {
		r.Endpoints = nil
	}
	if len(r.Skills) == 0 {
		r.Skills = nil
	}
	r.Skills = slices.Clone(r.Skills)
	for i := range r.Skills {
		if len(r.Skills[i].Examples) == 0 {
			r.Skills[i].Examples = nil
		}
	}
	return r
}

// wantListing checks every field of a listing read back.
func wantListing(t testing.TB, got, want store.Listing) {
	t.Helper()
	if g, w := canonRecord(got.Record), canonRecord(want.Record); !reflect.DeepEqual(g, w) {
		t.Errorf("record of %s:\n got %+v\nwant %+v", want.Record.Name, g, w)
	}
	wantUTC(t, "Record.IssuedAt", got.Record.IssuedAt)
	wantUTC(t, "Record.ExpiresAt", got.Record.ExpiresAt)
	if !bytes.Equal(got.Envelope, want.Envelope) {
		t.Errorf("envelope of %s differs (%d bytes, want %d)", want.Record.Name, len(got.Envelope), len(want.Envelope))
	}
	if got.Status != want.Status {
		t.Errorf("status of %s = %q, want %q", want.Record.Name, got.Status, want.Status)
	}
	wantTime(t, "LastSeen of "+want.Record.Name, got.LastSeen, want.LastSeen)
	wantTime(t, "UpdatedAt of "+want.Record.Name, got.UpdatedAt, want.UpdatedAt)
	if got.HostPeerID != want.HostPeerID {
		t.Errorf("host of %s = %q, want %q", want.Record.Name, got.HostPeerID, want.HostPeerID)
	}
	if got.Local != want.Local {
		t.Errorf("local of %s = %v, want %v", want.Record.Name, got.Local, want.Local)
	}
}
