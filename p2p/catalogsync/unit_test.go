package catalogsync

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentsite/agentsite/agent"
)

// The package's own parts, without a node (the tests of a running sync
// are the host's: p2p/sync_*_test.go).

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

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// A peer is synced from once per connection burst, and again as soon as it
// comes back after a disconnect.
func TestSyncTrackerForgetsDisconnectedPeers(t *testing.T) {
	tr := newSyncTracker()
	_, p := genKey(t)
	now := time.Now()
	if !tr.due(p, now) {
		t.Fatal("first sync not due")
	}
	if tr.due(p, now.Add(time.Second)) {
		t.Error("second identification of the same peer triggered another sync")
	}
	tr.forget(p)
	if !tr.due(p, now.Add(2*time.Second)) {
		t.Error("a peer back from a disconnect is not synced")
	}
	if !tr.due(p, now.Add(2*time.Second+syncRepeatAfter)) {
		t.Error("sync not due after syncRepeatAfter")
	}
}

// TestPeerSyncTableIsBounded: peers are adversaries; fresh identities
// syncing in turn cannot grow the table past maxSyncPeers, and the peers
// synced with most lately stay.
func TestPeerSyncTableIsBounded(t *testing.T) {
	tb := newPeerSyncTable()
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var last peer.ID
	for i := range maxSyncPeers + 50 {
		last = peer.ID(fmt.Sprintf("peer-%04d", i))
		tb.record(last, "new", "", at.Add(time.Duration(i)*time.Second))
	}
	tb.read(last, 100, at.Add(time.Hour))
	rows := tb.rows()
	if len(rows) != maxSyncPeers {
		t.Fatalf("%d rows, want at most %d", len(rows), maxSyncPeers)
	}
	found := false
	for _, r := range rows {
		if r.Peer == peer.ID("peer-0000").String() {
			t.Error("the peer synced with longest ago is still kept")
		}
		if r.Peer == last.String() {
			found = r.Bytes == 100 && r.Records["new"] == 1
		}
	}
	if !found {
		t.Error("the latest peer's row is missing or wrong")
	}
}

// TestSyncServeLogsAPeerOncePerInterval: a peer held back is named in the
// log once per serveLogEvery however often it is held back.
func TestSyncServeLogsAPeerOncePerInterval(t *testing.T) {
	var mu sync.Mutex
	at := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	var logged atomic.Int64
	logger := slog.New(countingHandler{&logged})
	l, err := newServeLimiter(ServeLimits{StreamsPerPeer: 1}, now, logger, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, p := genKey(t)
	if _, err := l.open(p, "192.0.2.0/24", SyncFeedProtocol); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := l.open(p, "192.0.2.0/24", SyncFeedProtocol); !errors.Is(err, errServeLimited) {
			t.Fatalf("a second stream with a limit of one: %v", err)
		}
	}
	if n := logged.Load(); n != 1 {
		t.Fatalf("5 refusals logged %d times, want once", n)
	}
	mu.Lock()
	at = at.Add(serveLogEvery)
	mu.Unlock()
	_, _ = l.open(p, "192.0.2.0/24", SyncFeedProtocol)
	if n := logged.Load(); n != 2 {
		t.Fatalf("a refusal an interval later: logged %d times in all, want 2", n)
	}
	if n := counterValue(l.limited.WithLabelValues(SyncFeedProtocol, serveActionBusy)); n != 6 {
		t.Fatalf("%v refusals counted, want 6", n)
	}
}

// countingHandler counts the records logged at Info or above.
type countingHandler struct{ n *atomic.Int64 }

func (h countingHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h countingHandler) Handle(context.Context, slog.Record) error    { h.n.Add(1); return nil }
func (h countingHandler) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h countingHandler) WithGroup(string) slog.Handler                { return h }
