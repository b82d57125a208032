package intake

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

func testPeer(t *testing.T) peer.ID {
	t.Helper()
	_, pub, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestAdmissionQuotas walks one relayer through its hour: records of
// never-heard publishers count against the relayer and its IP group,
// heard or trusted publishers and the relayer's own records do not, and the
// window opens again after the hour.
func TestAdmissionQuotas(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := newAdmission(Admission{UnheardPerHour: 10, UnheardPublishersPerHour: 3, IPGroupFactor: 2})
	relayer, other := testPeer(t), testPeer(t)
	pubs := []peer.ID{testPeer(t), testPeer(t), testPeer(t), testPeer(t)}
	rec := func(p peer.ID) *agent.Record { return &agent.Record{Publisher: p.String()} }
	take := func(from peer.ID, pub peer.ID) error {
		return a.check(rec(pub), from, "127.0.0.0/24", "self", now)
	}
	// Three publishers is the cap of distinct never-heard publishers.
	for i := 0; i < 3; i++ {
		if err := take(relayer, pubs[i]); err != nil {
			t.Fatalf("publisher %d: %v", i, err)
		}
	}
	if err := take(relayer, pubs[3]); !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("a fourth never-heard publisher: %v, want over quota", err)
	}
	// The same publishers fill the listing cap (10).
	for i := 3; i < 10; i++ {
		if err := take(relayer, pubs[i%3]); err != nil {
			t.Fatalf("listing %d: %v", i, err)
		}
	}
	if err := take(relayer, pubs[0]); !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("listing 11: %v, want over quota", err)
	}
	// A fresh identity in the same IP group shares the group's allowance
	// (20 listings, 6 publishers): 10 more, then no more.
	for i := 0; i < 10; i++ {
		if err := take(other, pubs[i%3]); err != nil {
			t.Fatalf("fresh relayer, listing %d: %v", i, err)
		}
	}
	if err := take(other, pubs[0]); !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("fresh relayer past the IP group's quota: %v", err)
	}
	// Heard publishers and the relayer's own records are not counted.
	a.hear(pubs[3].String(), now)
	if err := take(relayer, pubs[3]); err != nil {
		t.Fatalf("heard publisher: %v", err)
	}
	if err := take(relayer, relayer); err != nil {
		t.Fatalf("relayer's own record: %v", err)
	}
	// An hour later the windows are fresh.
	now = now.Add(unheardWindow)
	if err := take(relayer, pubs[0]); err != nil {
		t.Fatalf("after the hour: %v", err)
	}
}

func TestAdmissionPolicy(t *testing.T) {
	now := time.Now()
	bad, good, stranger, relayer := testPeer(t), testPeer(t), testPeer(t), testPeer(t)
	a := newAdmission(Admission{Block: []string{bad.String()}, Trust: []string{good.String()}, TrustedOnly: true, UnheardPerHour: 1, UnheardPublishersPerHour: 1})
	check := func(pub peer.ID) error {
		return a.check(&agent.Record{Publisher: pub.String()}, relayer, "", "self", now)
	}
	if err := check(bad); !errors.Is(err, ErrBlockedPublisher) {
		t.Fatalf("blocked publisher: %v", err)
	}
	if err := check(stranger); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("untrusted publisher with --trusted-only: %v", err)
	}
	for i := 0; i < 5; i++ { // trusted: no quota
		if err := a.check(&agent.Record{Publisher: good.String()}, relayer, "", "self", now); err != nil {
			t.Fatalf("trusted publisher: %v", err)
		}
	}
	if err := a.check(&agent.Record{Publisher: "self"}, relayer, "", "self", now); err != nil {
		t.Fatalf("own record: %v", err)
	}
}

// TestAdmissionPenaltyDecays: the penalty is the peer's negative
// application score, halves every penaltyHalfLife and is capped.
func TestAdmissionPenaltyDecays(t *testing.T) {
	now := time.Now()
	a := newAdmission(Admission{})
	p := testPeer(t)
	for i := 0; i < 100; i++ {
		a.penalise(p, 1, now)
	}
	if s := a.score(p, now); s > -99 || s < -100 {
		t.Fatalf("score after 100 refusals: %v", s)
	}
	if s := a.score(p, now.Add(penaltyHalfLife)); s > -49 || s < -51 {
		t.Fatalf("score a half-life later: %v", s)
	}
	for i := 0; i < 2*maxPenalty; i++ {
		a.penalise(p, 1, now)
	}
	if s := a.score(p, now); s < -maxPenalty {
		t.Fatalf("score %v past the cap", s)
	}
	if s := a.score(testPeer(t), now); s != 0 {
		t.Fatalf("an unknown peer's score: %v", s)
	}
}

func TestGossipRates(t *testing.T) {
	now := time.Now()
	a := newAdmission(Admission{PublisherPerMinute: 5, RelayerPerMinute: 8})
	relayer, pub := testPeer(t), testPeer(t)
	ok := 0
	for i := 0; i < 20; i++ {
		if r, p := a.allowGossip(relayer, pub.String(), now); r && p {
			ok++
		}
	}
	if ok != 5 {
		t.Fatalf("publisher's burst: %d accepted, want 5", ok)
	}
	other := testPeer(t)
	relayOK := 0
	for i := 0; i < 20; i++ {
		if r, _ := a.allowGossip(other, testPeer(t).String(), now); r {
			relayOK++
		}
	}
	if relayOK != 8 {
		t.Fatalf("relayer's burst: %d, want 8", relayOK)
	}
}

func TestIntroducedAuthorsPerForwarder(t *testing.T) {
	now := time.Now()
	a := newAdmission(Admission{IntroducedPerHour: 3, IPGroupFactor: 2})
	fwd, other := testPeer(t), testPeer(t)
	for i := 0; i < 3; i++ {
		if err := a.introduce(testPeer(t).String(), fwd, "10.0.0.0/24", now); err != nil {
			t.Fatalf("author %d: %v", i, err)
		}
	}
	again := testPeer(t).String()
	if err := a.introduce(again, fwd, "10.0.0.0/24", now); !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("a fourth new author: %v", err)
	}
	// A fresh forwarder on the same IP group shares the group's 6.
	for i := 0; i < 3; i++ {
		if err := a.introduce(testPeer(t).String(), other, "10.0.0.0/24", now); err != nil {
			t.Fatalf("fresh forwarder, author %d: %v", i, err)
		}
	}
	if err := a.introduce(testPeer(t).String(), testPeer(t), "10.0.0.0/24", now); !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("past the IP group's allowance: %v", err)
	}
	if err := a.introduce(testPeer(t).String(), fwd, "10.0.0.0/24", now.Add(unheardWindow)); err != nil {
		t.Fatalf("an hour later: %v", err)
	}
}

func TestRelayedHeartbeatRateFollowsThePlanet(t *testing.T) {
	now := time.Now()
	a := newAdmission(Admission{})
	fwd := testPeer(t)
	took := 0
	for i := 0; i < 1000; i++ {
		if a.allowRelayedHeartbeat(fwd, 10*time.Second, now) {
			took++
		}
	}
	if took != 2*64 {
		t.Fatalf("a burst with no author heard: %d taken, want %d", took, 2*64)
	}
	for i := 0; i < 500; i++ {
		a.hear(testPeer(t).String(), now)
	}
	other := testPeer(t)
	took = 0
	for i := 0; i < 5000; i++ {
		if a.allowRelayedHeartbeat(other, 10*time.Second, now) {
			took++
		}
	}
	if took != 2*(500+64) {
		t.Fatalf("a burst with 500 authors heard: %d taken, want %d", took, 2*(500+64))
	}
}

// TestAdmissionProvedPublisher: a publisher this node proved controls a
// domain (not a trusted one) is not held to the quota of never-heard
// publishers, however many of its listings a peer relays; a stranger is.
func TestAdmissionProvedPublisher(t *testing.T) {
	now := time.Now()
	proved, stranger, relayer := testPeer(t), testPeer(t), testPeer(t)
	a := newAdmission(Admission{UnheardPerHour: 2, UnheardPublishersPerHour: 1,
		Verified: func(p string) []string {
			if p == proved.String() {
				return []string{"example.org"}
			}
			return nil
		}})
	for i := range 10 {
		if err := a.check(&agent.Record{Publisher: proved.String()}, relayer, "", "self", now); err != nil {
			t.Fatalf("listing %d of a publisher with a proved domain: %v", i, err)
		}
	}
	for i := range 3 {
		err := a.check(&agent.Record{Publisher: stranger.String()}, relayer, "", "self", now)
		if want := i >= 2; errors.Is(err, agent.ErrOverQuota) != want {
			t.Errorf("listing %d of a stranger: %v, over quota wanted %v", i, err, want)
		}
	}
}

// TestAdmissionRefusalLoggedOncePerInterval: a relaying peer's refusals
// over the allowance of never-heard publishers are logged once a minute
// per peer, not once a record, and the refusal is still a quota one.
func TestAdmissionRefusalLoggedOncePerInterval(t *testing.T) {
	now := time.Now()
	relayer, other := testPeer(t), testPeer(t)
	a := newAdmission(Admission{UnheardPerHour: 1})
	if err := a.check(&agent.Record{Publisher: testPeer(t).String()}, relayer, "", "self", now); err != nil {
		t.Fatal(err)
	}
	err := a.check(&agent.Record{Publisher: testPeer(t).String()}, relayer, "", "self", now)
	if !errors.Is(err, ErrUnheardQuota) || !errors.Is(err, agent.ErrOverQuota) {
		t.Fatalf("over the allowance: %v, want ErrUnheardQuota wrapping ErrOverQuota", err)
	}
	due := 0
	for i := range 100 {
		if a.logDue(relayer.String(), now.Add(time.Duration(i)*time.Second)) {
			due++
		}
	}
	if due != 2 { // at 0 s and 60 s
		t.Errorf("100 refusals over 100 s logged %d times, want 2", due)
	}
	if !a.logDue(other.String(), now) {
		t.Errorf("another peer's first refusal is not logged")
	}
}
