package registry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

var (
	alice = registry.Actor{Owner: "alice"}
	bob   = registry.Actor{Owner: "bob"}
)

// mustGet reads listing id from the store.
func mustGet(t *testing.T, st store.Store, id string) store.Listing {
	t.Helper()
	l, err := st.GetAgent(t.Context(), id)
	if err != nil {
		t.Fatalf("get agent %s: %v", id, err)
	}
	return l
}

// mustCreate registers in for a.
func mustCreate(t *testing.T, env *registrytest.Env, a registry.Actor, in registry.Input) store.Listing {
	t.Helper()
	l, err := env.Registry.Create(t.Context(), a, in)
	if err != nil {
		t.Fatalf("create %s for %+v: %v", in.Name, a, err)
	}
	return l
}

// wantField checks err is a ValidationError naming field; if msg is not
// empty, its message must contain msg.
func wantField(t *testing.T, err error, field, msg string) {
	t.Helper()
	var ve *agent.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want a ValidationError on %q", err, field)
	}
	got, ok := ve.Fields[field]
	if !ok || !strings.Contains(got, msg) {
		t.Fatalf("fields = %v, want %q containing %q", ve.Fields, field, msg)
	}
}

// wantSeqAfter checks seq follows the seq rule: above prev and at least
// the clock in microseconds at now.
func wantSeqAfter(t *testing.T, seq, prev uint64, now time.Time) {
	t.Helper()
	if seq <= prev || seq < uint64(now.UnixMicro()) {
		t.Fatalf("seq = %d, want > %d and ≥ %d (the clock in µs)", seq, prev, now.UnixMicro())
	}
}

func TestCreate(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		in := registrytest.Input("  Weather-Bot ")
		in.Tags = []string{" News ", "", "weather"}
		l := mustCreate(t, env, alice, in)

		id, err := env.Publisher.AgentID("weather-bot")
		if err != nil {
			t.Fatal(err)
		}
		stored := mustGet(t, st, id)
		for _, got := range []store.Listing{l, stored} {
			r := got.Record
			if r.ID != id || r.Name != "weather-bot" || r.Owner != "alice" || r.Publisher != env.PeerID || r.Tombstone {
				t.Errorf("record = id %s name %q owner %q publisher %s tombstone %v; want %s weather-bot alice %s false",
					r.ID, r.Name, r.Owner, r.Publisher, r.Tombstone, id, env.PeerID)
			}
			if fmt.Sprint(r.Tags) != "[news weather]" {
				t.Errorf("tags = %q, want normalized [news weather]", r.Tags)
			}
			if !got.Local || got.HostPeerID != env.PeerID || got.Status != store.StatusOnline {
				t.Errorf("listing local %v host %s status %s; want true %s online", got.Local, got.HostPeerID, got.Status, env.PeerID)
			}
			if !r.ExpiresAt.Equal(env.Clock.Now().Add(registrytest.TTL)) {
				t.Errorf("expires_at = %v, want clock + TTL", r.ExpiresAt)
			}
		}
		wantSeqAfter(t, stored.Record.Seq, 0, env.Clock.Now())
		if stored.Record.Seq != l.Record.Seq {
			t.Errorf("returned seq %d, stored %d", l.Record.Seq, stored.Record.Seq)
		}
		rec, err := agent.Open(stored.Envelope, time.Now())
		if err != nil || rec.Seq != stored.Record.Seq || rec.Owner != "alice" {
			t.Fatalf("stored envelope: %+v, %v; want a valid signed record of seq %d", rec, err, stored.Record.Seq)
		}
		b, err := st.GetBackend(t.Context(), id)
		if err != nil || b.Kind != agent.BackendBuiltin || b.Builtin != "echo" {
			t.Fatalf("backend = %v, %v; want builtin echo", b, err)
		}

		for _, a := range []registry.Actor{alice, bob, registry.Operator} {
			_, err := env.Registry.Create(t.Context(), a, registrytest.Input("weather-bot"))
			wantField(t, err, "name", "already registered")
		}
		if again := mustGet(t, st, id); again.Record.Seq != stored.Record.Seq || again.Record.Owner != "alice" {
			t.Errorf("a refused create changed the listing: seq %d owner %q", again.Record.Seq, again.Record.Owner)
		}
	})
}

func TestCreateRefusesInvalidInput(t *testing.T) {
	cases := []struct {
		name, field string
		edit        func(*registry.Input)
		private     bool // AllowPrivate
	}{
		{"short name", "name", func(in *registry.Input) { in.Name = "ab" }, true},
		{"no display name", "display_name", func(in *registry.Input) { in.DisplayName = "  " }, true},
		{"bad tag", "tags[0]", func(in *registry.Input) { in.Tags = []string{"no spaces allowed"} }, true},
		{"unknown backend", "backend.kind", func(in *registry.Input) { in.Backend = agent.Backend{Kind: "ftp"} }, true},
		{"llm without model", "backend.model", func(in *registry.Input) {
			in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: "https://llm.example/v1"}
		}, true},
		{"private backend", "backend.url", func(in *registry.Input) {
			in.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://127.0.0.1:9/hook"}
		}, false},
	}
	st := sqlitetest.Open(t)
	env := registrytest.New(t, st)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env.Registry.AllowPrivate = tc.private
			in := registrytest.Input("valid-name")
			tc.edit(&in)
			_, err := env.Registry.Create(t.Context(), alice, in)
			wantField(t, err, tc.field, "")
			if local, err := st.ListLocal(t.Context()); err != nil || len(local) != 0 {
				t.Errorf("listings after a refused create: %v, %v", local, err)
			}
			id, _ := env.Publisher.AgentID(strings.ToLower(strings.TrimSpace(in.Name)))
			if _, err := st.GetBackend(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("backend after a refused create: err %v, want ErrNotFound", err)
			}
		})
	}
}

func llmInput(name, model, key string) registry.Input {
	in := registrytest.Input(name)
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: "http://127.0.0.1:9/v1", Model: model, APIKey: key}
	return in
}

func TestUpdate(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		prev := mustCreate(t, env, alice, llmInput("notes", "m1", "sk-old"))
		id := prev.Record.ID

		env.Clock.Add(time.Second)
		in := llmInput("notes", "m2", "")
		in.DisplayName = "Notes, renamed"
		l, err := env.Registry.Update(ctx, alice, id, in)
		if err != nil {
			t.Fatal(err)
		}
		stored := mustGet(t, st, id)
		wantSeqAfter(t, stored.Record.Seq, prev.Record.Seq, env.Clock.Now())
		if stored.Record.Owner != "alice" || stored.Record.DisplayName != "Notes, renamed" || l.Record.Seq != stored.Record.Seq {
			t.Errorf("after update: owner %q display %q seq %d (returned %d)", stored.Record.Owner, stored.Record.DisplayName, stored.Record.Seq, l.Record.Seq)
		}
		if b, err := st.GetBackend(ctx, id); err != nil || b.Model != "m2" || b.APIKey != "sk-old" {
			t.Fatalf("backend = model %q key %q, %v; want m2 with the stored key kept", b.Model, b.APIKey, err)
		}

		// A clock that went back still gives a higher seq.
		env.Clock.Add(-time.Minute)
		if _, err := env.Registry.Update(ctx, alice, id, llmInput("notes", "m2", "sk-new")); err != nil {
			t.Fatal(err)
		}
		after := mustGet(t, st, id)
		if after.Record.Seq != stored.Record.Seq+1 {
			t.Errorf("seq with the clock behind = %d, want prev+1 = %d", after.Record.Seq, stored.Record.Seq+1)
		}
		if b, _ := st.GetBackend(ctx, id); b.APIKey != "sk-new" {
			t.Errorf("a new key was not stored: %q", b.APIKey)
		}

		// The operator may update; the owner stays.
		if _, err := env.Registry.Update(ctx, registry.Operator, id, llmInput("notes", "m3", "")); err != nil {
			t.Fatal(err)
		}
		if got := mustGet(t, st, id); got.Record.Owner != "alice" {
			t.Errorf("owner after the operator's update = %q, want alice", got.Record.Owner)
		}
	})
}

func TestUpdateRefused(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		prev := mustCreate(t, env, alice, registrytest.Input("notes"))
		id := prev.Record.ID

		for _, a := range []registry.Actor{bob, {}} {
			in := registrytest.Input("notes")
			in.DisplayName = "Hijacked"
			if _, err := env.Registry.Update(ctx, a, id, in); !errors.Is(err, registry.ErrNotYours) {
				t.Errorf("update by %+v: err %v, want ErrNotYours", a, err)
			}
		}
		_, err := env.Registry.Update(ctx, alice, id, registrytest.Input("other-name"))
		wantField(t, err, "name", "cannot change")
		if _, err := env.Registry.Update(ctx, alice, strings.Repeat("a", agent.IDLen), registrytest.Input("notes")); !errors.Is(err, registry.ErrNoAgent) {
			t.Errorf("update of an unknown id: err %v, want ErrNoAgent", err)
		}
		if got := mustGet(t, st, id); got.Record.Seq != prev.Record.Seq || got.Record.DisplayName != prev.Record.DisplayName {
			t.Errorf("a refused update changed the listing: seq %d display %q", got.Record.Seq, got.Record.DisplayName)
		}
	})
}

func TestDelete(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		prev := mustCreate(t, env, alice, registrytest.Input("gone"))
		id := prev.Record.ID

		if err := env.Registry.Delete(ctx, bob, id); !errors.Is(err, registry.ErrNotYours) {
			t.Fatalf("delete by bob: err %v, want ErrNotYours", err)
		}
		env.Clock.Add(time.Second)
		if err := env.Registry.Delete(ctx, alice, id); err != nil {
			t.Fatal(err)
		}
		l := mustGet(t, st, id)
		if !l.Record.Tombstone || l.Record.Owner != "alice" {
			t.Fatalf("after delete: tombstone %v owner %q; want a tombstone of alice's", l.Record.Tombstone, l.Record.Owner)
		}
		wantSeqAfter(t, l.Record.Seq, prev.Record.Seq, env.Clock.Now())
		if rec, err := agent.Open(l.Envelope, time.Now()); err != nil || !rec.Tombstone {
			t.Fatalf("stored envelope: %+v, %v; want a signed tombstone", rec, err)
		}
		if _, err := st.GetBackend(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("backend after delete: err %v, want ErrNotFound", err)
		}
		if err := env.Registry.Delete(ctx, alice, id); !errors.Is(err, registry.ErrNoAgent) {
			t.Errorf("second delete: err %v, want ErrNoAgent", err)
		}
		if _, err := env.Registry.Update(ctx, alice, id, registrytest.Input("gone")); !errors.Is(err, registry.ErrNoAgent) {
			t.Errorf("update of a deleted agent: err %v, want ErrNoAgent", err)
		}
	})
}

func TestDeletedNameReserved(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		deleted := func(name string) store.Listing {
			l := mustCreate(t, env, alice, registrytest.Input(name))
			if err := env.Registry.Delete(ctx, alice, l.Record.ID); err != nil {
				t.Fatal(err)
			}
			return mustGet(t, st, l.Record.ID)
		}

		tomb := deleted("kept")
		_, err := env.Registry.Create(ctx, bob, registrytest.Input("kept"))
		wantField(t, err, "name", registry.MsgNameReserved)
		if got := mustGet(t, st, tomb.Record.ID); !got.Record.Tombstone || got.Record.Seq != tomb.Record.Seq {
			t.Fatalf("a refused create changed the tombstone: %+v", got.Record)
		}
		again := mustCreate(t, env, alice, registrytest.Input("kept"))
		if again.Record.Owner != "alice" || again.Record.Tombstone || again.Record.Seq <= tomb.Record.Seq {
			t.Errorf("re-created by its owner: owner %q tombstone %v seq %d (tombstone's %d)",
				again.Record.Owner, again.Record.Tombstone, again.Record.Seq, tomb.Record.Seq)
		}

		tomb = deleted("handed-over")
		op := mustCreate(t, env, registry.Operator, registrytest.Input("handed-over"))
		if op.Record.Owner != "" || op.Record.Tombstone || op.Record.Seq <= tomb.Record.Seq {
			t.Errorf("re-created by the operator: owner %q tombstone %v seq %d (tombstone's %d)",
				op.Record.Owner, op.Record.Tombstone, op.Record.Seq, tomb.Record.Seq)
		}
	})
}

func TestEnsureOperatorAgent(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		first, err := env.Registry.EnsureOperatorAgent(ctx, registrytest.Input("demo-echo"))
		if err != nil {
			t.Fatal(err)
		}
		if first.Record.Owner != "" || !first.Local {
			t.Fatalf("created: owner %q local %v; want the operator's local agent", first.Record.Owner, first.Local)
		}

		env.Clock.Add(time.Second)
		in := registrytest.Input("demo-echo")
		in.DisplayName = "Echo, again"
		second, err := env.Registry.EnsureOperatorAgent(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		stored := mustGet(t, st, first.Record.ID)
		wantSeqAfter(t, stored.Record.Seq, first.Record.Seq, env.Clock.Now())
		if second.Record.ID != first.Record.ID || stored.Record.DisplayName != "Echo, again" {
			t.Errorf("refreshed: id %s display %q; want %s, Echo, again", second.Record.ID, stored.Record.DisplayName, first.Record.ID)
		}

		// An operator's deleted agent is published afresh.
		if err := env.Registry.Delete(ctx, registry.Operator, first.Record.ID); err != nil {
			t.Fatal(err)
		}
		back, err := env.Registry.EnsureOperatorAgent(ctx, in)
		if err != nil || back.Record.Tombstone {
			t.Fatalf("after the operator's delete: %+v, %v; want the agent back", back.Record, err)
		}

		// A user's name, live or deleted, is theirs.
		mine := mustCreate(t, env, alice, registrytest.Input("mine"))
		wasMine := mustCreate(t, env, alice, registrytest.Input("was-mine"))
		if err := env.Registry.Delete(ctx, alice, wasMine.Record.ID); err != nil {
			t.Fatal(err)
		}
		for _, l := range []store.Listing{mine, mustGet(t, st, wasMine.Record.ID)} {
			_, err := env.Registry.EnsureOperatorAgent(ctx, registrytest.Input(l.Record.Name))
			if !errors.Is(err, registry.ErrNameTaken) {
				t.Errorf("ensure %s: err %v, want ErrNameTaken", l.Record.Name, err)
			}
			if got := mustGet(t, st, l.Record.ID); got.Record.Seq != l.Record.Seq || got.Record.Owner != "alice" {
				t.Errorf("ensure %s changed it: seq %d owner %q", l.Record.Name, got.Record.Seq, got.Record.Owner)
			}
		}
	})
}

func TestRefresh(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		env.Registry.TTL = 10 * time.Minute
		soon := mustCreate(t, env, alice, registrytest.Input("soon"))
		env.Registry.TTL = registrytest.TTL
		later := mustCreate(t, env, alice, registrytest.Input("later"))

		env.Clock.Add(time.Second)
		n, err := env.Registry.Refresh(ctx, 15*time.Minute)
		if err != nil || n != 1 {
			t.Fatalf("refresh = %d, %v; want 1 (only the listing expiring within the window)", n, err)
		}
		got := mustGet(t, st, soon.Record.ID)
		wantSeqAfter(t, got.Record.Seq, soon.Record.Seq, env.Clock.Now())
		if !got.Record.ExpiresAt.Equal(env.Clock.Now().Add(registrytest.TTL)) || got.Record.Owner != "alice" {
			t.Errorf("refreshed: expires %v owner %q; want clock + TTL, alice", got.Record.ExpiresAt, got.Record.Owner)
		}
		if rec, err := agent.Open(got.Envelope, time.Now()); err != nil || rec.Seq != got.Record.Seq {
			t.Errorf("refreshed envelope: %v, %v", rec, err)
		}
		if l := mustGet(t, st, later.Record.ID); l.Record.Seq != later.Record.Seq {
			t.Errorf("a listing outside the window was re-signed: seq %d → %d", later.Record.Seq, l.Record.Seq)
		}
		if n, err := env.Registry.Refresh(ctx, 15*time.Minute); err != nil || n != 0 {
			t.Errorf("second refresh = %d, %v; want 0", n, err)
		}
	})
}

// dht is a fake Network: it holds what another node published and, like
// p2p.Node.Lookup, verifies and caches a record before returning it.
type dht struct {
	env    *registrytest.Env // the node asking
	remote store.Store       // the publishing node's store: what the DHT holds
	calls  atomic.Int32
}

var errNoValue = errors.New("routing: not found")

func (d *dht) Lookup(ctx context.Context, id string) (*agent.Record, error) {
	d.calls.Add(1)
	l, err := d.remote.GetAgent(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoValue, err)
	}
	return d.env.Hear(ctx, l)
}

func TestFind(t *testing.T) {
	registrytest.Engines(t, func(t *testing.T, st store.Store) {
		env := registrytest.New(t, st)
		ctx := t.Context()
		other := registrytest.New(t, sqlitetest.Open(t))
		far := mustCreate(t, other, registry.Operator, registrytest.Input("far-away"))
		net := &dht{env: env, remote: other.Store}

		local := mustCreate(t, env, alice, registrytest.Input("near"))
		tomb := mustCreate(t, env, alice, registrytest.Input("deleted"))
		if err := env.Registry.Delete(ctx, alice, tomb.Record.ID); err != nil {
			t.Fatal(err)
		}

		for _, withNet := range []bool{false, true} {
			if withNet {
				env.Registry.Network = net
			}
			if l, err := env.Registry.Find(ctx, local.Record.ID); err != nil || !l.Local {
				t.Errorf("network %v: find a local agent: %+v, %v", withNet, l, err)
			}
			for _, id := range []string{"", "not-an-id", strings.Repeat("A", agent.IDLen), strings.Repeat("a", agent.IDLen)} {
				if _, err := env.Registry.Find(ctx, id); !errors.Is(err, registry.ErrNoAgent) {
					t.Errorf("network %v: find %q: err %v, want ErrNoAgent", withNet, id, err)
				}
			}
			if _, err := env.Registry.Find(ctx, tomb.Record.ID); !errors.Is(err, registry.ErrAgentGone) {
				t.Errorf("network %v: find a deleted agent: err %v, want ErrAgentGone", withNet, err)
			}
		}
		if n := net.calls.Load(); n != 1 {
			t.Errorf("network asked %d times, want once (the unknown well-formed id only)", n)
		}

		l, err := env.Registry.Find(ctx, far.Record.ID)
		if err != nil {
			t.Fatalf("find an agent only the network has: %v", err)
		}
		if l.Local || l.Record.Publisher != other.PeerID || l.HostPeerID != other.PeerID || l.Record.Seq != far.Record.Seq {
			t.Errorf("found: local %v publisher %s host %s seq %d; want a listing of %s, seq %d",
				l.Local, l.Record.Publisher, l.HostPeerID, l.Record.Seq, other.PeerID, far.Record.Seq)
		}
		before := net.calls.Load()
		if _, err := env.Registry.Find(ctx, far.Record.ID); err != nil || net.calls.Load() != before {
			t.Errorf("second find: %v, network asked again (%d → %d); want a cache hit", err, before, net.calls.Load())
		}
	})
}

// flakyPublisher is the real publisher, failing on demand.
type flakyPublisher struct {
	registry.Publisher
	fail atomic.Bool
}

var errPublish = errors.New("publish failed on purpose")

func (p *flakyPublisher) Publish(ctx context.Context, rec *agent.Record) error {
	if p.fail.Load() {
		return errPublish
	}
	return p.Publisher.Publish(ctx, rec)
}

func TestFailedPublishRestoresBackend(t *testing.T) {
	st := sqlitetest.Open(t)
	env := registrytest.New(t, st)
	ctx := t.Context()
	pub := &flakyPublisher{Publisher: env.Registry.Publisher}
	env.Registry.Publisher = pub

	pub.fail.Store(true)
	if _, err := env.Registry.Create(ctx, alice, registrytest.Input("never")); !errors.Is(err, errPublish) {
		t.Fatalf("create: err %v, want the publish error", err)
	}
	id, _ := env.Publisher.AgentID("never")
	if _, err := st.GetBackend(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("backend after a failed create: err %v, want ErrNotFound", err)
	}
	if _, err := st.GetAgent(ctx, id); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("listing after a failed create: err %v, want ErrNotFound", err)
	}

	pub.fail.Store(false)
	prev := mustCreate(t, env, alice, llmInput("kept", "m1", "sk-1"))
	pub.fail.Store(true)
	if _, err := env.Registry.Update(ctx, alice, prev.Record.ID, llmInput("kept", "m2", "sk-2")); !errors.Is(err, errPublish) {
		t.Fatalf("update: err %v, want the publish error", err)
	}
	if b, err := st.GetBackend(ctx, prev.Record.ID); err != nil || b.Model != "m1" || b.APIKey != "sk-1" {
		t.Errorf("backend after a failed update: model %q key %q, %v; want the previous one", b.Model, b.APIKey, err)
	}
	if err := env.Registry.Delete(ctx, alice, prev.Record.ID); !errors.Is(err, errPublish) {
		t.Fatalf("delete: err %v, want the publish error", err)
	}
	if _, err := st.GetBackend(ctx, prev.Record.ID); err != nil {
		t.Errorf("backend after a failed delete: %v, want it kept", err)
	}
	if got := mustGet(t, st, prev.Record.ID); got.Record.Tombstone || got.Record.Seq != prev.Record.Seq {
		t.Errorf("listing after failed publishes: tombstone %v seq %d; want unchanged", got.Record.Tombstone, got.Record.Seq)
	}
}

func TestCanManage(t *testing.T) {
	mine := store.Listing{Record: agent.Record{Owner: "alice"}, Local: true}
	operators := store.Listing{Local: true}
	remote := store.Listing{Record: agent.Record{Owner: "alice"}}
	cases := []struct {
		actor registry.Actor
		l     store.Listing
		want  bool
	}{
		{alice, mine, true},
		{bob, mine, false},
		{registry.Actor{}, mine, false},
		{registry.Actor{}, operators, false}, // an account with no handle is nobody's
		{alice, operators, false},
		{registry.Operator, mine, true},
		{registry.Operator, operators, true},
		{alice, remote, false},
		{registry.Operator, remote, false},
	}
	for _, tc := range cases {
		if got := tc.actor.CanManage(tc.l); got != tc.want {
			t.Errorf("%+v.CanManage(owner %q, local %v) = %v, want %v", tc.actor, tc.l.Record.Owner, tc.l.Local, got, tc.want)
		}
	}
}

func TestNextSeq(t *testing.T) {
	cases := []struct {
		prev uint64
		now  int64
		want uint64
	}{
		{0, 1_700_000_000_000_000, 1_700_000_000_000_000}, // the clock, on a fresh name
		{5, 1_700_000_000_000_000, 1_700_000_000_000_000}, // above an old small seq
		{1_700_000_000_000_000, 1_700_000_000_000_000, 1_700_000_000_000_001},
		{1_800_000_000_000_000, 1_700_000_000_000_000, 1_800_000_000_000_001}, // clock behind
		{7, 0, 8},
		{7, -1, 8},
	}
	for _, tc := range cases {
		if got := registry.NextSeq(tc.prev, tc.now); got != tc.want {
			t.Errorf("NextSeq(%d, %d) = %d, want %d", tc.prev, tc.now, got, tc.want)
		}
	}
}
