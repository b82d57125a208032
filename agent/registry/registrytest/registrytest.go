// Package registrytest builds a Registry the way the node does — a real
// store, a fresh Ed25519 node key and the real p2p.Publisher delivering
// through store.Sink — for the direct tests of the use cases
// (agent/registry, agent/chat) without any HTTP surface.
package registrytest

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// TTL is the record lifetime of a test Registry (the node's default).
const TTL = time.Hour

// Env is one node's registry on a real store.
type Env struct {
	Store     store.Store
	Sink      *store.Sink // how records enter Store, ours and the network's
	Registry  *registry.Registry
	Publisher *p2p.Publisher
	PeerID    string
	Clock     *Clock
}

// New builds a node on st: its own key, a publisher delivering to st
// through a store.Sink, and a Registry (no Network; private backend
// addresses allowed, as tests point backends at 127.0.0.1) whose clock is
// e.Clock.
func New(t testing.TB, st store.Store) *Env {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	sink := &store.Sink{Store: st, SelfID: pid.String()}
	pub := p2p.NewPublisher(key, sink)
	clock := NewClock()
	reg := &registry.Registry{Store: st, Publisher: pub, PeerID: pid.String(), TTL: TTL, AllowPrivate: true,
		Logger: slog.New(slog.DiscardHandler), Now: clock.Now}
	return &Env{Store: st, Sink: sink, Registry: reg, Publisher: pub, PeerID: pid.String(), Clock: clock}
}

// Hear delivers l, a listing another node published, to e's store the way
// the network does: its signed envelope is verified, then put through the
// Sink. It returns the verified record.
func (e *Env) Hear(ctx context.Context, l store.Listing) (*agent.Record, error) {
	rec, err := agent.Open(l.Envelope, time.Now())
	if err != nil {
		return nil, fmt.Errorf("verify envelope: %w", err)
	}
	if _, err := e.Sink.Put(ctx, rec, l.Envelope); err != nil {
		return nil, fmt.Errorf("deliver record: %w", err)
	}
	return rec, nil
}

// Remote registers in on another node (its own SQLite store) and delivers
// the signed record to e, as gossip would: e's store then lists an agent
// that is not Local, hosted by that node.
func (e *Env) Remote(t testing.TB, in registry.Input) store.Listing {
	t.Helper()
	other := New(t, sqlitetest.Open(t))
	l, err := other.Registry.Create(t.Context(), registry.Operator, in)
	if err != nil {
		t.Fatalf("register %s on another node: %v", in.Name, err)
	}
	if _, err := e.Hear(t.Context(), l); err != nil {
		t.Fatalf("hear %s: %v", in.Name, err)
	}
	heard, err := e.Store.GetAgent(t.Context(), l.Record.ID)
	if err != nil {
		t.Fatalf("read %s back: %v", in.Name, err)
	}
	return heard
}

// Engines runs fn on SQLite, then on Postgres (pgtest: skipped loudly
// without a server, a failure under CI). The test package's TestMain must
// call pgtest.Main.
func Engines(t *testing.T, fn func(t *testing.T, st store.Store)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, sqlitetest.Open(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.Open(t)) })
}

// Input is a valid registration of an echo agent called name.
func Input(name string) registry.Input {
	return registry.Input{
		Name:        name,
		DisplayName: "Agent " + name,
		Description: "A test agent.",
		Tags:        []string{"test"},
		Version:     "1.0.0",
		Backend:     agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
}

// Clock is a settable clock for Registry.Now and Chat.Now. It starts at
// the real time and should stay near it: the publisher checks issued_at
// and expires_at against the real clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock is a Clock at the real time, in whole microseconds: the
// precision Postgres keeps, so times read back compare equal.
func NewClock() *Clock { return &Clock{t: time.Now().UTC().Truncate(time.Microsecond)} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d (back, if d is negative).
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
