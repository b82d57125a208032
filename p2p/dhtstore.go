package p2p

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	ds "github.com/ipfs/go-datastore"
	dsq "github.com/ipfs/go-datastore/query"
	dssync "github.com/ipfs/go-datastore/sync"
	dht "github.com/libp2p/go-libp2p-kad-dht"
	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	recpb "github.com/libp2p/go-libp2p-record/pb"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// DHTStoreLimits bound the DHT values a node holds for other peers
// (docs/architecture.md "Peers are adversaries": a bounded store with expiry, and a
// per-peer cap). Without them kad-dht keeps every valid PUT in a map that
// is never swept: 20,000 PUTs of 4.9 KB raised a server's heap by
// 110–130 MB for good. Zero fields take the defaults.
type DHTStoreLimits struct {
	// MaxBytes bounds the bytes held (values, keys and bookkeeping;
	// DefaultDHTStoreBytes). When full, the oldest values of other peers go.
	MaxBytes int64
	// MaxValues bounds how many values are held (default 50,000).
	MaxValues int
	// PerPeer bounds the values one sending peer has stored here
	// (DefaultDHTValuesPerPeer).
	PerPeer int
	// PerIPGroup bounds the values the peers of one IP group (/24 of
	// IPv4, /48 of IPv6) have stored here together
	// (DefaultDHTValuesPerIPGroup), so fresh identities on one machine
	// share one allowance.
	PerIPGroup int
	// UnknownPublisher bounds the values one sending peer has stored
	// here whose publisher is neither that peer nor a publisher this node
	// hears (default 16): relaying others' records is what the DHT's
	// repairs do, minting publishers is what a flood does.
	UnknownPublisher int
	// MaxAge is how long a value is kept after it was received, whatever
	// its record's expiry (kad-dht's MaxRecordAge; default 1 h, the
	// default record TTL: hosts re-announce at half of it).
	MaxAge time.Duration
	// SweepInterval is how often expired values are dropped (kad-dht's
	// ValueGCInterval; default 5 min). Reads never serve one before.
	SweepInterval time.Duration
	// Unbounded keeps kad-dht's own unbounded in-memory map, as before
	// the bounds: for the benchmark that measures what they save.
	Unbounded bool
}

func (l *DHTStoreLimits) defaults() {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultDHTStoreBytes
	}
	if l.MaxValues <= 0 {
		l.MaxValues = 50_000
	}
	if l.PerPeer <= 0 {
		l.PerPeer = DefaultDHTValuesPerPeer
	}
	if l.PerIPGroup <= 0 {
		l.PerIPGroup = DefaultDHTValuesPerIPGroup
	}
	if l.UnknownPublisher <= 0 {
		l.UnknownPublisher = 16
	}
	if l.MaxAge <= 0 {
		l.MaxAge = time.Hour
	}
	if l.SweepInterval <= 0 {
		l.SweepInterval = 5 * time.Minute
	}
}

// Reasons a DHT PUT is refused, the label of agentsite_p2p_dht_puts_refused_total.
const (
	refusePeerCap    = "peer_cap"
	refuseGroupCap   = "group_cap"
	refuseUnknownPub = "unknown_publisher"
	refuseFull       = "full"
	refuseInvalid    = "invalid"
)

// errDHTRefused is what a refused Put returns; kad-dht hands the failure
// to the sender (it resets the stream).
var errDHTRefused = errors.New("DHT value refused")

// senderField is the protobuf field number under which the request hook
// tags a PUT_VALUE's record with its sender. It is not a field of
// record.pb's Record, so the value store's Clone and Marshal carry it as
// an unknown field to the datastore, which strips it before storing.
const senderField protowire.Number = 6766

// entryOverhead is charged for each held value besides its bytes and key:
// the map entries, the list element and this bookkeeping. Measured with
// BenchmarkRogueDHTPut (bytecap-16MiB): about 0.7 KB of heap per value,
// so the byte cap is a bound on the heap, with room to spare.
const entryOverhead = 1024

// tagSender is kad-dht's OnRequestHook. It runs on the goroutine that
// serves the stream, right before the message's handler (dht_net.go
// handleNewMessage), so each PUT_VALUE reaches the datastore carrying the
// peer that sent it. Whatever unknown fields the sender put there are
// replaced: nobody can claim to be someone else, or this node.
func tagSender(_ context.Context, s network.Stream, req *dhtpb.Message) {
	if req.GetType() != dhtpb.Message_PUT_VALUE || req.GetRecord() == nil {
		return
	}
	tagRecord(req.Record, s.Conn().RemotePeer())
}

func tagRecord(rec *recpb.Record, from peer.ID) {
	b := protowire.AppendTag(nil, senderField, protowire.BytesType)
	b = protowire.AppendBytes(b, []byte(from))
	rec.ProtoReflect().SetUnknown(b)
}

// takeSender reads the sender tag off rec and removes every unknown field.
// A record without one is this node's own put (kad-dht's PutValue stores
// locally without a request).
func takeSender(rec *recpb.Record) (from peer.ID, tagged bool) {
	raw := rec.ProtoReflect().GetUnknown()
	if len(raw) == 0 {
		return "", false
	}
	rec.ProtoReflect().SetUnknown(nil)
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			break
		}
		raw = raw[n:]
		if num == senderField && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(raw)
			if m < 0 {
				break
			}
			from, tagged = peer.ID(v), true
			raw = raw[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, raw)
		if m < 0 {
			break
		}
		raw = raw[m:]
	}
	return from, true
}

// dhtStore is the datastore behind kad-dht's value store: go-datastore's
// in-memory map with the bounds of DHTStoreLimits around it. Every value
// is an agent record that verifies; each is charged to the peer that sent
// it (and its IP group) until it is replaced, expires or is evicted.
type dhtStore struct {
	child ds.Batching
	lim   DHTStoreLimits
	now   func() time.Time
	group func(peer.ID) string // the IP group of a connected peer ("" if none)
	known func(peer.ID) bool   // whether this node hears the publisher
	m     *dhtStoreMetrics

	mu        sync.Mutex
	entries   map[ds.Key]*dhtEntry
	order     *list.List // others' values, oldest first: the eviction order
	bytes     int64
	ownBytes  int64 // of this node's own values, which are never evicted
	ownValues int
	perPeer   map[peer.ID]int
	perGroup  map[string]int
	unknown   map[peer.ID]int
}

type dhtEntry struct {
	key     ds.Key
	size    int64
	sender  peer.ID // "" for this node's own put
	group   string
	unknown bool // the publisher is neither the sender nor known
	expires time.Time
	elem    *list.Element // in order; nil for this node's own
}

type dhtStoreMetrics struct {
	refused *prometheus.CounterVec
	dropped *prometheus.CounterVec
}

var _ ds.Batching = (*dhtStore)(nil)

func newDHTStore(lim DHTStoreLimits, now func() time.Time, group func(peer.ID) string, known func(peer.ID) bool) *dhtStore {
	lim.defaults()
	return &dhtStore{
		child: dssync.MutexWrap(ds.NewMapDatastore()),
		lim:   lim, now: now, group: group, known: known,
		m: &dhtStoreMetrics{
			refused: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: "agentsite", Subsystem: "p2p", Name: "dht_puts_refused_total",
				Help: "Valid-looking DHT PUTs this node refused to store, by reason (peer_cap, group_cap, unknown_publisher, full, invalid).",
			}, []string{"reason"}),
			dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
				Namespace: "agentsite", Subsystem: "p2p", Name: "dht_values_dropped_total",
				Help: "DHT values this node dropped, by reason (expired: past the record's expires_at; evicted: the oldest, to make room).",
			}, []string{"reason"}),
		},
		entries: map[ds.Key]*dhtEntry{}, order: list.New(),
		perPeer: map[peer.ID]int{}, perGroup: map[string]int{}, unknown: map[peer.ID]int{},
	}
}

func (s *dhtStore) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "agentsite", Subsystem: "p2p", Name: name, Help: help}, f)
	}
	for _, c := range []prometheus.Collector{
		s.m.refused, s.m.dropped,
		gauge("dht_values", "DHT values this node holds.", func() float64 { return float64(s.Stats().Values) }),
		gauge("dht_value_bytes", "Bytes of the DHT values this node holds (with keys and bookkeeping), bounded by --dht-store-mib.", func() float64 { return float64(s.Stats().Bytes) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

func (s *dhtStore) refuse(reason string, err error) error {
	s.m.refused.WithLabelValues(reason).Inc()
	if err != nil {
		return fmt.Errorf("%w (%s): %w", errDHTRefused, reason, err)
	}
	return fmt.Errorf("%w (%s)", errDHTRefused, reason)
}

// Put stores a value kad-dht's value store has validated and selected,
// within the bounds.
func (s *dhtStore) Put(ctx context.Context, key ds.Key, data []byte) error {
	var rec recpb.Record
	if err := proto.Unmarshal(data, &rec); err != nil {
		return s.refuse(refuseInvalid, err)
	}
	from, tagged := takeSender(&rec)
	if tagged {
		var err error
		if data, err = proto.Marshal(&rec); err != nil {
			return s.refuse(refuseInvalid, err)
		}
	}
	now := s.now()
	r, err := recordValidator{now: func() time.Time { return now }}.open(string(rec.GetKey()), rec.GetValue())
	if err != nil {
		return s.refuse(refuseInvalid, err)
	}
	e := &dhtEntry{key: key, size: int64(len(data)+len(key.String())) + entryOverhead, sender: from, expires: r.ExpiresAt}
	if from != "" {
		e.group = s.group(from)
		if r.Publisher != from.String() {
			pub, err := peer.Decode(r.Publisher)
			e.unknown = err != nil || !s.known(pub)
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.entries[key]
	if reason := s.overCap(e, old); reason != "" {
		return s.refuse(reason, nil)
	}
	// Room: others' values can be evicted, this node's own cannot.
	ownBytes, ownValues := s.ownBytes, s.ownValues
	if old != nil && old.sender == "" {
		ownBytes, ownValues = ownBytes-old.size, ownValues-1
	}
	if e.size > s.lim.MaxBytes-ownBytes || ownValues >= s.lim.MaxValues {
		return s.refuse(refuseFull, nil)
	}
	if old != nil {
		s.forget(old)
	}
	for s.bytes+e.size > s.lim.MaxBytes || len(s.entries) >= s.lim.MaxValues {
		front := s.order.Front()
		if front == nil { // cannot happen: the room was checked above
			return s.refuse(refuseFull, nil)
		}
		victim := front.Value.(*dhtEntry)
		if err := s.child.Delete(ctx, victim.key); err != nil {
			return err
		}
		s.forget(victim)
		s.m.dropped.WithLabelValues("evicted").Inc()
	}
	if err := s.child.Put(ctx, key, data); err != nil {
		return err
	}
	s.remember(e)
	return nil
}

// overCap is the cap e's sender would exceed by storing it in place of
// old ("" if none).
func (s *dhtStore) overCap(e, old *dhtEntry) string {
	if e.sender == "" {
		return ""
	}
	same := old != nil && old.sender == e.sender
	switch {
	case e.unknown && !(same && old.unknown) && s.unknown[e.sender] >= s.lim.UnknownPublisher:
		return refuseUnknownPub
	case !same && s.perPeer[e.sender] >= s.lim.PerPeer:
		return refusePeerCap
	case e.group != "" && !(old != nil && old.sender != "" && old.group == e.group) && s.perGroup[e.group] >= s.lim.PerIPGroup:
		return refuseGroupCap
	}
	return ""
}

func (s *dhtStore) remember(e *dhtEntry) {
	s.entries[e.key] = e
	s.bytes += e.size
	if e.sender == "" {
		s.ownBytes += e.size
		s.ownValues++
		return
	}
	e.elem = s.order.PushBack(e)
	s.perPeer[e.sender]++
	if e.group != "" {
		s.perGroup[e.group]++
	}
	if e.unknown {
		s.unknown[e.sender]++
	}
}

// forget removes e from the bookkeeping (not from the child).
func (s *dhtStore) forget(e *dhtEntry) {
	delete(s.entries, e.key)
	s.bytes -= e.size
	if e.sender == "" {
		s.ownBytes -= e.size
		s.ownValues--
		return
	}
	s.order.Remove(e.elem)
	decr(s.perPeer, e.sender)
	if e.group != "" {
		decr(s.perGroup, e.group)
	}
	if e.unknown {
		decr(s.unknown, e.sender)
	}
}

func decr[K comparable](m map[K]int, k K) {
	if m[k] <= 1 {
		delete(m, k)
		return
	}
	m[k]--
}

// expired drops the value at key if its record's expires_at has passed.
// The caller holds s.mu.
func (s *dhtStore) expired(ctx context.Context, key ds.Key, now time.Time) bool {
	e, ok := s.entries[key]
	if !ok || now.Before(e.expires) {
		return false
	}
	if err := s.child.Delete(ctx, key); err != nil {
		return false
	}
	s.forget(e)
	s.m.dropped.WithLabelValues("expired").Inc()
	return true
}

// Get returns a value, unless its record has expired (then it is dropped).
func (s *dhtStore) Get(ctx context.Context, key ds.Key) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expired(ctx, key, s.now()) {
		return nil, ds.ErrNotFound
	}
	return s.child.Get(ctx, key)
}

func (s *dhtStore) Has(ctx context.Context, key ds.Key) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expired(ctx, key, s.now()) {
		return false, nil
	}
	return s.child.Has(ctx, key)
}

func (s *dhtStore) GetSize(ctx context.Context, key ds.Key) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.expired(ctx, key, s.now()) {
		return -1, ds.ErrNotFound
	}
	return s.child.GetSize(ctx, key)
}

// Query first drops every value whose record has expired: kad-dht's value
// GC queries the store every SweepInterval, so this is the sweep.
func (s *dhtStore) Query(ctx context.Context, q dsq.Query) (dsq.Results, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for k := range s.entries {
		s.expired(ctx, k, now)
	}
	return s.child.Query(ctx, q)
}

func (s *dhtStore) Delete(ctx context.Context, key ds.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.child.Delete(ctx, key); err != nil {
		return err
	}
	if e, ok := s.entries[key]; ok {
		s.forget(e)
	}
	return nil
}

func (s *dhtStore) Sync(ctx context.Context, prefix ds.Key) error { return s.child.Sync(ctx, prefix) }

// Batch applies its writes through Put and Delete, so the bounds hold.
func (s *dhtStore) Batch(context.Context) (ds.Batch, error) { return ds.NewBasicBatch(s), nil }

func (s *dhtStore) Close() error { return s.child.Close() }

// DHTStoreStats is what a node holds for the DHT.
type DHTStoreStats struct {
	Values int
	Bytes  int64
	// PerPeer is the values each sending peer has stored here (this
	// node's own puts are not counted).
	PerPeer map[string]int
}

// Stats is the store's current holding.
func (s *dhtStore) Stats() DHTStoreStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := DHTStoreStats{Values: len(s.entries), Bytes: s.bytes, PerPeer: make(map[string]int, len(s.perPeer))}
	for p, c := range s.perPeer {
		st.PerPeer[p.String()] = c
	}
	return st
}

// DHTStoreStats is what this node holds for the DHT now, for operators
// and tests (zero when the store is unbounded or there is no DHT).
func (n *Node) DHTStoreStats() DHTStoreStats {
	if n.values == nil {
		return DHTStoreStats{}
	}
	return n.values.Stats()
}

// dhtValueOptions are the kad-dht options of the bounded value store,
// built on h (n.host is not set yet while libp2p builds the routing).
func (n *Node) dhtValueOptions(h host.Host) ([]dht.Option, error) {
	lim := n.cfg.DHTStore
	if lim.Unbounded {
		return nil, nil
	}
	lim.defaults()
	n.values = newDHTStore(lim, n.now,
		func(p peer.ID) string { return ipGroup(h.Network(), p) },
		// n.knownPublisher reads n.host, set once libp2p.New returns;
		// until then (a PUT during start-up) nobody is known.
		func(p peer.ID) bool { return n.hostp.Load() != nil && n.knownPublisher(p) })
	if err := n.values.register(n.cfg.Registerer); err != nil {
		return nil, fmt.Errorf("p2p metrics: %w", err)
	}
	return []dht.Option{
		// Values only: provider records keep kad-dht's own store.
		dht.ValueDatastore(n.values),
		dht.MaxRecordAge(lim.MaxAge),
		dht.ValueGCInterval(lim.SweepInterval),
		dht.OnRequestHook(tagSender),
	}, nil
}
