package p2p

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	"github.com/libp2p/go-libp2p"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"

	"github.com/agentsite/agentsite/agent"
)

var storeNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// testClock is an injected clock.
type testClock struct{ t time.Time }

func (c *testClock) now() time.Time { return c.t }

func genKey(t testing.TB) (crypto.PrivKey, peer.ID) {
	t.Helper()
	k, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(k)
	return k, id
}

// sealRecord signs a minimal valid record named name with key, issued at
// issued, living ttl.
func sealRecord(t testing.TB, key crypto.PrivKey, name string, seq uint64, issued time.Time, ttl time.Duration, desc string) (*agent.Record, []byte) {
	t.Helper()
	r := &agent.Record{Name: name, DisplayName: "Bot", Description: desc, Seq: seq, IssuedAt: issued, ExpiresAt: issued.Add(ttl)}
	env, err := agent.Seal(r, key, issued)
	if err != nil {
		t.Fatal(err)
	}
	return r, env
}

// stored is what kad-dht's value store hands the datastore for env: the
// record, tagged with its sender by the request hook unless from is ""
// (this node's own put).
func stored(t testing.TB, id string, env []byte, from peer.ID) (ds.Key, []byte) {
	t.Helper()
	rec := &recpb.Record{Key: []byte(dhtKey(id)), Value: env, TimeReceived: storeNow.Format(time.RFC3339Nano)}
	if from != "" {
		tagRecord(rec, from)
	}
	b, err := proto.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	return ds.NewKey(dhtKey(id)), b
}

type storeFixture struct {
	t     *testing.T
	s     *dhtStore
	clock *testClock
	known map[peer.ID]bool
	group map[peer.ID]string
}

func newStoreFixture(t *testing.T, lim DHTStoreLimits) *storeFixture {
	f := &storeFixture{t: t, clock: &testClock{storeNow}, known: map[peer.ID]bool{}, group: map[peer.ID]string{}}
	f.s = newDHTStore(lim, f.clock.now, func(p peer.ID) string { return f.group[p] }, func(p peer.ID) bool { return f.known[p] })
	return f
}

// put stores a fresh record of publisher key, sent by from; it returns the
// record's id and the Put's error.
func (f *storeFixture) put(key crypto.PrivKey, name string, from peer.ID) (string, error) {
	f.t.Helper()
	r, env := sealRecord(f.t, key, name, 1, f.clock.t, time.Hour, "")
	k, b := stored(f.t, r.ID, env, from)
	return r.ID, f.s.Put(context.Background(), k, b)
}

func (f *storeFixture) mustPut(key crypto.PrivKey, name string, from peer.ID) string {
	f.t.Helper()
	id, err := f.put(key, name, from)
	if err != nil {
		f.t.Fatalf("put %s from %s: %v", name, from, err)
	}
	return id
}

func (f *storeFixture) refused(reason string) float64 {
	return counterValue(f.s.m.refused.WithLabelValues(reason))
}

func (f *storeFixture) has(id string) bool {
	_, err := f.s.Get(context.Background(), ds.NewKey(dhtKey(id)))
	if err != nil && !errors.Is(err, ds.ErrNotFound) {
		f.t.Fatal(err)
	}
	return err == nil
}

func wantRefused(t *testing.T, err error, what string) {
	t.Helper()
	if !errors.Is(err, errDHTRefused) {
		t.Fatalf("%s: err = %v, want refused", what, err)
	}
}

func TestDHTStorePerPeerCap(t *testing.T) {
	f := newStoreFixture(t, DHTStoreLimits{PerPeer: 3})
	pk, p := genKey(t)
	_, q := genKey(t)
	f.known[q] = true
	for i := range 3 {
		f.mustPut(pk, fmt.Sprintf("bot-%d", i), p)
	}
	_, err := f.put(pk, "bot-3", p)
	wantRefused(t, err, "4th value of one peer")
	if got := f.refused(refusePeerCap); got != 1 {
		t.Errorf("refused{peer_cap} = %v, want 1", got)
	}
	// Another peer relaying p's records has its own allowance; this
	// node's own puts have none.
	f.mustPut(pk, "bot-4", q)
	f.mustPut(pk, "bot-5", "")
	st := f.s.Stats()
	if st.Values != 5 || st.PerPeer[p.String()] != 3 || st.PerPeer[q.String()] != 1 || len(st.PerPeer) != 2 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestDHTStoreIPGroupCap(t *testing.T) {
	f := newStoreFixture(t, DHTStoreLimits{PerPeer: 3, PerIPGroup: 4})
	pk, p := genKey(t)
	qk, q := genKey(t)
	rk, r := genKey(t)
	f.group[p], f.group[q], f.group[r] = "192.0.2.0/24", "192.0.2.0/24", "198.51.100.0/24"
	for i := range 3 {
		f.mustPut(pk, fmt.Sprintf("p-%d", i), p)
	}
	f.mustPut(qk, "q-0", q)
	_, err := f.put(qk, "q-1", q)
	wantRefused(t, err, "5th value of one IP group")
	if got := f.refused(refuseGroupCap); got != 1 {
		t.Errorf("refused{group_cap} = %v, want 1", got)
	}
	f.mustPut(rk, "r-0", r) // another group
}

func TestDHTStoreUnknownPublisherAllowance(t *testing.T) {
	f := newStoreFixture(t, DHTStoreLimits{UnknownPublisher: 2})
	sk, sender := genKey(t)
	for i := range 2 {
		k, _ := genKey(t)
		f.mustPut(k, fmt.Sprintf("fresh-%d", i), sender)
	}
	k, _ := genKey(t)
	_, err := f.put(k, "fresh-2", sender)
	wantRefused(t, err, "3rd record of a never-heard publisher")
	if got := f.refused(refuseUnknownPub); got != 1 {
		t.Errorf("refused{unknown_publisher} = %v, want 1", got)
	}
	// A publisher this node hears, and the sender's own records, are no
	// strangers.
	hk, heard := genKey(t)
	f.known[heard] = true
	f.mustPut(hk, "heard-bot", sender)
	f.mustPut(sk, "own-bot", sender)
	// The allowance is the sender's: another peer has its own.
	_, other := genKey(t)
	f.mustPut(k, "fresh-2", other)
}

func TestDHTStoreEvictsTheOldestWhenFull(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		f := newStoreFixture(t, DHTStoreLimits{MaxValues: 3})
		ok, _ := genKey(t)
		own := f.mustPut(ok, "own-bot", "") // never evicted
		var ids []string
		for range 4 {
			k, p := genKey(t)
			ids = append(ids, f.mustPut(k, "bot", p))
			f.clock.t = f.clock.t.Add(time.Second)
		}
		if st := f.s.Stats(); st.Values != 3 {
			t.Fatalf("values = %d, want 3", st.Values)
		}
		if !f.has(own) || f.has(ids[0]) || f.has(ids[1]) || !f.has(ids[2]) || !f.has(ids[3]) {
			t.Fatalf("held: own %v, %v %v %v %v; want the own and the two newest", f.has(own), f.has(ids[0]), f.has(ids[1]), f.has(ids[2]), f.has(ids[3]))
		}
		if got := counterValue(f.s.m.dropped.WithLabelValues("evicted")); got != 2 {
			t.Errorf("dropped{evicted} = %v, want 2", got)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		k, _ := genKey(t)
		r, env := sealRecord(t, k, "probe", 1, storeNow, time.Hour, strings.Repeat("x", 4000))
		key, b := stored(t, r.ID, env, "") // as held: without the sender tag
		size := int64(len(b)+len(key.String())) + entryOverhead
		f := newStoreFixture(t, DHTStoreLimits{MaxBytes: 3*size - 1})
		var ids []string
		for range 5 {
			k, p := genKey(t)
			r, env := sealRecord(t, k, "probe", 1, storeNow, time.Hour, strings.Repeat("x", 4000))
			key, b := stored(t, r.ID, env, p)
			if err := f.s.Put(context.Background(), key, b); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
			if st := f.s.Stats(); st.Bytes > f.s.lim.MaxBytes {
				t.Fatalf("holds %d bytes, bound %d", st.Bytes, f.s.lim.MaxBytes)
			}
		}
		if st := f.s.Stats(); st.Values != 2 || !f.has(ids[3]) || !f.has(ids[4]) {
			t.Fatalf("stats %+v; want the two newest", st)
		}
		// A value bigger than the whole store is refused, not stored by
		// emptying it.
		f.s.lim.MaxBytes = size - 1
		k, p := genKey(t)
		r, env = sealRecord(t, k, "probe", 1, storeNow, time.Hour, strings.Repeat("x", 4000))
		key, b = stored(t, r.ID, env, p)
		wantRefused(t, f.s.Put(context.Background(), key, b), "a value over the byte cap")
		if got := counterValue(f.s.m.refused.WithLabelValues(refuseFull)); got != 1 {
			t.Errorf("refused{full} = %v, want 1", got)
		}
	})
}

func TestDHTStoreDropsExpiredRecords(t *testing.T) {
	f := newStoreFixture(t, DHTStoreLimits{})
	k, p := genKey(t)
	short, env := sealRecord(t, k, "short-lived", 1, storeNow, time.Minute, "")
	key, b := stored(t, short.ID, env, p)
	if err := f.s.Put(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
	swept, env := sealRecord(t, k, "swept", 1, storeNow, 2*time.Minute, "")
	key2, b := stored(t, swept.ID, env, p)
	if err := f.s.Put(context.Background(), key2, b); err != nil {
		t.Fatal(err)
	}
	long := f.mustPut(k, "long-lived", p)
	if !f.has(short.ID) {
		t.Fatal("a live record is not served")
	}
	f.clock.t = storeNow.Add(time.Minute)
	if f.has(short.ID) {
		t.Fatal("a record past its expires_at is still served")
	}
	if st := f.s.Stats(); st.Values != 2 || st.PerPeer[p.String()] != 2 {
		t.Fatalf("after expiry: %+v", st)
	}
	// kad-dht's value GC queries the store: that is the sweep.
	f.clock.t = storeNow.Add(3 * time.Minute)
	res, err := f.s.Query(context.Background(), dsq.Query{Prefix: "/agent"})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := res.Rest()
	if len(entries) != 1 || entries[0].Key != ds.NewKey(dhtKey(long)).String() {
		t.Fatalf("query after the sweep = %v", entries)
	}
	if st := f.s.Stats(); st.Values != 1 || st.PerPeer[p.String()] != 1 {
		t.Fatalf("after the sweep: %+v", st)
	}
	if got := counterValue(f.s.m.dropped.WithLabelValues("expired")); got != 2 {
		t.Errorf("dropped{expired} = %v, want 2", got)
	}
}

func TestDHTStoreNewerSeqReplacesTheBytes(t *testing.T) {
	f := newStoreFixture(t, DHTStoreLimits{PerPeer: 1})
	k, p := genKey(t)
	_, q := genKey(t)
	f.known[p] = true
	r1, env1 := sealRecord(t, k, "bot", 1, storeNow, time.Hour, strings.Repeat("a", 3000))
	key, b1 := stored(t, r1.ID, env1, p)
	if err := f.s.Put(context.Background(), key, b1); err != nil {
		t.Fatal(err)
	}
	before := f.s.Stats().Bytes
	_, env2 := sealRecord(t, k, "bot", 2, storeNow, time.Hour, "")
	_, b2 := stored(t, r1.ID, env2, p)
	if err := f.s.Put(context.Background(), key, b2); err != nil {
		t.Fatalf("a newer seq from the same peer at its cap: %v", err)
	}
	st := f.s.Stats()
	if st.Values != 1 || st.PerPeer[p.String()] != 1 || st.Bytes != before-int64(len(b1)-len(b2)) {
		t.Fatalf("after the replacement: %+v (before %d bytes)", st, before)
	}
	// Relayed by another peer, the value is charged to that peer.
	_, env3 := sealRecord(t, k, "bot", 3, storeNow, time.Hour, "")
	_, b3 := stored(t, r1.ID, env3, q)
	if err := f.s.Put(context.Background(), key, b3); err != nil {
		t.Fatal(err)
	}
	if st := f.s.Stats(); st.Values != 1 || st.PerPeer[q.String()] != 1 || st.PerPeer[p.String()] != 0 {
		t.Fatalf("after the relay: %+v", st)
	}
}

func TestDHTStoreRefusesWhatIsNotAnAgentRecord(t *testing.T) {
	f := newStoreFixture(t, DHTStoreLimits{})
	k, p := genKey(t)
	r, env := sealRecord(t, k, "bot", 1, storeNow, time.Hour, "")
	other, _ := sealRecord(t, k, "other-bot", 1, storeNow, time.Hour, "")
	misfiled, _ := proto.Marshal(&recpb.Record{Key: []byte(dhtKey(other.ID)), Value: env})
	pk, _ := proto.Marshal(&recpb.Record{Key: []byte("/pk/x"), Value: []byte("key")})
	for name, b := range map[string][]byte{"garbage": []byte("\xff\xff"), "misfiled": misfiled, "other namespace": pk} {
		wantRefused(t, f.s.Put(context.Background(), ds.NewKey(dhtKey(r.ID)), b), name)
	}
	if got := f.refused(refuseInvalid); got != 3 {
		t.Errorf("refused{invalid} = %v, want 3", got)
	}
	// What is stored carries no sender tag.
	key, b := stored(t, r.ID, env, p)
	if err := f.s.Put(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
	got, err := f.s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var rec recpb.Record
	if err := proto.Unmarshal(got, &rec); err != nil || len(rec.ProtoReflect().GetUnknown()) != 0 {
		t.Fatalf("stored record: %v, unknown fields %x", err, rec.ProtoReflect().GetUnknown())
	}
}

// fakeCache is a Cache that takes everything and serves nothing.
type fakeCache struct{}

func (fakeCache) Put(context.Context, *agent.Record, []byte) (bool, error) { return true, nil }
func (fakeCache) Envelopes(context.Context, int64, string, int) ([][]byte, int64, error) {
	return nil, 0, nil
}
func (fakeCache) NodeSeen(context.Context, agent.Heartbeat) error                  { return nil }
func (fakeCache) LocalCount(context.Context) (int, error)                          { return 0, nil }
func (fakeCache) LocalNames(context.Context, []string) (map[string]string, error)  { return nil, nil }
func (fakeCache) SetHealth(context.Context, string, map[string]agent.Health) error { return nil }

// rawPutter sends PUT_VALUE requests to one DHT server the way kad-dht's
// client does (varint-delimited protobuf on /agentsite/kad/1.0.0), without
// storing anything itself. A refused PUT resets the stream; the next one
// opens another.
type rawPutter struct {
	h  host.Host
	to peer.ID
	s  network.Stream
	r  *bufio.Reader
}

func (p *rawPutter) put(ctx context.Context, key string, val []byte) error {
	if p.s == nil {
		s, err := p.h.NewStream(ctx, p.to, protocol.ID(DHTPrefix+"/kad/1.0.0"))
		if err != nil {
			return err
		}
		p.s, p.r = s, bufio.NewReader(s)
	}
	msg := &dhtpb.Message{Type: dhtpb.Message_PUT_VALUE, Key: []byte(key), Record: &recpb.Record{Key: []byte(key), Value: val}}
	_, err := protodelim.MarshalTo(p.s, msg)
	if err == nil {
		err = protodelim.UnmarshalFrom(p.r, &dhtpb.Message{})
	}
	if err != nil {
		_ = p.s.Reset()
		p.s = nil
	}
	return err
}

func startDHTServer(t testing.TB, lim DHTStoreLimits, reg prometheus.Registerer) *Node {
	t.Helper()
	key, _ := genKey(t)
	n, err := New(context.Background(), key, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Cache: fakeCache{}, Registerer: reg, DHTStore: lim, NoSyncOnConnect: true}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	return n
}

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func newRawPutter(t testing.TB, to *Node) (*rawPutter, crypto.PrivKey, peer.ID) {
	t.Helper()
	key, id := genKey(t)
	h, err := libp2p.New(libp2p.Identity(key), libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"), libp2p.DisableMetrics())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	if err := h.Connect(context.Background(), peer.AddrInfo{ID: to.Host().ID(), Addrs: to.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	return &rawPutter{h: h, to: to.Host().ID()}, key, id
}

// TestDHTServerBoundsARoguePeer runs the store behind a real kad-dht server
// and PUTs to it from a rogue libp2p host: the request hook charges each
// value to its sender, so the caps hold on the wire.
func TestDHTServerBoundsARoguePeer(t *testing.T) {
	n := startDHTServer(t, DHTStoreLimits{PerPeer: 20, UnknownPublisher: 4}, prometheus.NewRegistry())
	rogue, own, rogueID := newRawPutter(t, n)
	ctx := t.Context()
	// Records of fresh publishers: 4 stored.
	refusedFresh := 0
	for i := range 30 {
		k, _ := genKey(t)
		r, env := sealRecord(t, k, fmt.Sprintf("fresh-%d", i), 1, time.Now(), time.Hour, "")
		if rogue.put(ctx, dhtKey(r.ID), env) != nil {
			refusedFresh++
		}
	}
	// Its own records: up to 20 in all.
	refusedOwn := 0
	for i := range 30 {
		r, env := sealRecord(t, own, fmt.Sprintf("own-%d", i), 1, time.Now(), time.Hour, "")
		if rogue.put(ctx, dhtKey(r.ID), env) != nil {
			refusedOwn++
		}
	}
	st := n.DHTStoreStats()
	if st.PerPeer[rogueID.String()] != 20 || st.Values != 20 {
		t.Fatalf("stats = %+v, want 20 values, all the rogue's", st)
	}
	if refusedFresh != 26 || refusedOwn != 14 {
		t.Errorf("refused %d fresh and %d own PUTs, want 26 and 14", refusedFresh, refusedOwn)
	}
	m := n.values.m.refused
	if u, p := counterValue(m.WithLabelValues(refuseUnknownPub)), counterValue(m.WithLabelValues(refusePeerCap)); u != 26 || p != 14 {
		t.Errorf("refused{unknown_publisher} = %v, {peer_cap} = %v; want 26 and 14", u, p)
	}
	// A value of this node's own is never charged to anyone.
	r, env := sealRecord(t, n.key, "mine", 1, time.Now(), time.Hour, "")
	if err := n.DHT().PutValue(ctx, dhtKey(r.ID), env); err != nil && !strings.Contains(err.Error(), "failed to find any peer") {
		t.Logf("put own: %v", err)
	}
	if got, err := n.DHT().GetValue(ctx, dhtKey(r.ID)); err != nil || string(got) != string(env) {
		t.Fatalf("own record: %v", err)
	}
	if st := n.DHTStoreStats(); st.Values != 21 || st.PerPeer[rogueID.String()] != 20 || len(st.PerPeer) != 1 {
		t.Fatalf("after the own put: %+v", st)
	}
}

// BenchmarkRogueDHTPut measures the heap a DHT server keeps after 10,000
// valid PUTs of 4.9 KB from one rogue peer:
//
//	go test -run xxx -bench RogueDHTPut -benchtime 1x ./p2p
//
// unbounded is kad-dht's own map (before), bounded the defaults (after),
// bytecap lifts the per-peer caps so only the 16 MiB byte cap holds.
func BenchmarkRogueDHTPut(b *testing.B) {
	for _, bc := range []struct {
		name string
		lim  DHTStoreLimits
		own  bool // the rogue signs with its own key (else fresh keys)
	}{
		{"unbounded/fresh-keys", DHTStoreLimits{Unbounded: true}, false},
		{"bounded/fresh-keys", DHTStoreLimits{}, false},
		{"bounded/own-key", DHTStoreLimits{}, true},
		{"bytecap-16MiB/own-key", DHTStoreLimits{MaxBytes: 16 << 20, PerPeer: 1 << 30, PerIPGroup: 1 << 30}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			const puts = 10_000
			var grew float64
			for range b.N {
				n := startDHTServer(b, bc.lim, nil)
				rogue, own, _ := newRawPutter(b, n)
				desc := strings.Repeat("x", agent.MaxDescriptionBytes)
				before := heapInUse()
				for i := range puts {
					k := own
					if !bc.own {
						k, _ = genKey(b)
					}
					r, env := sealRecord(b, k, fmt.Sprintf("bot-%d", i), 1, time.Now(), time.Hour, desc)
					_ = rogue.put(b.Context(), dhtKey(r.ID), env)
				}
				grew += float64(heapInUse()-before) / (1 << 20)
				b.ReportMetric(float64(n.DHTStoreStats().Values), "values-held")
				_ = n.Close()
			}
			b.ReportMetric(grew/float64(b.N), "heap-MiB/10k-puts")
		})
	}
}

func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}
