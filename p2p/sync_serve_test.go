package p2p

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// rogueStream is a raw sync stream a test peer opens to a server.
type rogueStream struct {
	s     network.Stream
	proto string
	r     *bufio.Reader
}

func openRogue(t testing.TB, from *Node, to peer.ID, proto string) *rogueStream {
	t.Helper()
	s, err := from.Host().NewStream(context.Background(), to, protocol.ID(proto))
	if err != nil {
		t.Fatal(err)
	}
	size := maxFeedHeader
	if proto == SyncProtocol {
		size = maxSyncResponse
	}
	return &rogueStream{s: s, proto: proto, r: bufio.NewReaderSize(s, size)}
}

// ask sends n requests for the first page at once (limit 0: the head of
// the feed only, on 1.1.0).
func (rs *rogueStream) ask(t testing.TB, n, limit int) {
	t.Helper()
	var b []byte
	for range n {
		var line []byte
		if rs.proto == SyncProtocol {
			line, _ = json.Marshal(syncRequest{Limit: max(limit, 1)})
		} else {
			line, _ = json.Marshal(feedRequest{Limit: limit})
		}
		b = append(append(b, line...), '\n')
	}
	_ = rs.s.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rs.s.Write(b); err != nil {
		t.Fatal(err)
	}
}

// next reads one answer; it returns the page's bytes on the wire.
func (rs *rogueStream) next(limit int) (int, error) {
	_ = rs.s.SetReadDeadline(time.Now().Add(20 * time.Second))
	if rs.proto == SyncProtocol {
		line, err := rs.r.ReadSlice('\n')
		if err != nil {
			return 0, asRefusal(line, err)
		}
		return len(line), nil
	}
	_, read, err := readFeedPage(rs.r, feedRequest{Limit: limit})
	return read, err
}

// pull pipelines reqs requests for a page, then reads answers until the
// stream ends: the page bytes received, and why it ended.
func (rs *rogueStream) pull(t testing.TB, reqs int) (int, error) {
	rs.ask(t, reqs, syncPageSize)
	total := 0
	for range reqs {
		n, err := rs.next(syncPageSize)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// frozen is a clock that does not move: a budget spent stays spent.
func frozen() func() time.Time {
	at := time.Now()
	return func() time.Time { return at }
}

// TestSyncServeBoundsAPipeliningPeer: a peer that opens several sync
// streams and pipelines requests on each receives at most its byte budget
// (the clock stands still, so nothing refills), over both protocols; peers
// of one IP group together receive at most the group's. Past it the
// server says why and ends the stream.
func TestSyncServeBoundsAPipeliningPeer(t *testing.T) {
	const listings, reqs, streams = 200, 20, 4
	srcKey, _ := genKey(t)
	src := &memCache{}
	fillSource(t, srcKey, listings, src)
	page := syncPageSize * len(src.order[0]) // about one page's bytes
	for _, c := range []struct {
		name        string
		proto       string
		rogues      int
		groupFactor int
	}{
		{"peer/1.1.0", SyncFeedProtocol, 1, 100},
		{"peer/1.0.0", SyncProtocol, 1, 100},
		{"group", SyncFeedProtocol, 3, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			budget := 3 * page
			lim := SyncServeLimits{BytesPerSecond: 1, Burst: budget, GroupFactor: c.groupFactor, MaxWait: 10 * time.Millisecond, now: frozen()}
			s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true, SyncServe: lim})
			var got, refusals atomic.Int64
			var wg sync.WaitGroup
			for range c.rogues {
				rogue := startBare(t, Config{})
				connect(t, rogue, s)
				for range streams {
					rs := openRogue(t, rogue, s.Host().ID(), c.proto)
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer rs.s.Close()
						n, err := rs.pull(t, reqs)
						got.Add(int64(n))
						if errors.Is(err, errSyncRefused) {
							refusals.Add(1)
						}
					}()
				}
			}
			wg.Wait()
			asked := c.rogues * streams * reqs * page
			if int(got.Load()) > budget {
				t.Fatalf("the rogue peers received %d bytes of pages (they asked for ~%d); the budget is %d", got.Load(), asked, budget)
			}
			if got.Load() == 0 || refusals.Load() == 0 {
				t.Fatalf("received %d bytes, %d streams refused: want some pages, then refusals", got.Load(), refusals.Load())
			}
			if n := counterValue(s.serving.limited.WithLabelValues(c.proto, serveActionRefused)); n == 0 {
				t.Error("no refusal counted in the metric")
			}
		})
	}
}

// TestSyncServeRefusesAThirdStream: a peer has at most two sync streams
// open at once, whichever the protocol; the third is refused with a
// reason, and once one closes a new one is served.
func TestSyncServeRefusesAThirdStream(t *testing.T) {
	srcKey, _ := genKey(t)
	src := &memCache{}
	fillSource(t, srcKey, 5, src)
	s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true})
	rogue := startBare(t, Config{})
	connect(t, rogue, s)
	served := func(rs *rogueStream) error {
		rs.ask(t, 1, 0)
		_, err := rs.next(0)
		return err
	}
	first := openRogue(t, rogue, s.Host().ID(), SyncFeedProtocol)
	second := openRogue(t, rogue, s.Host().ID(), SyncProtocol)
	for _, rs := range []*rogueStream{first, second} {
		if err := served(rs); err != nil {
			t.Fatalf("%s: %v", rs.proto, err)
		}
	}
	for _, proto := range []string{SyncFeedProtocol, SyncProtocol} {
		third := openRogue(t, rogue, s.Host().ID(), proto)
		err := served(third)
		if !errors.Is(err, errSyncRefused) || !strings.Contains(err.Error(), "at most 2 sync streams") {
			t.Fatalf("a third stream (%s) got %v; want a refusal that says why", proto, err)
		}
		_ = third.s.Close()
	}
	_ = first.s.Close()
	waitfor.Until(t, 10*time.Second, "a stream to be served once one closed", func() bool {
		rs := openRogue(t, rogue, s.Host().ID(), SyncFeedProtocol)
		defer rs.s.Close()
		return served(rs) == nil
	})
}

// TestSyncServeLetsAnHonestSyncFinish: a mirror that syncs from a node
// whose budget is a little over one page fills whole over both
// protocols: its pages wait for the budget (the clock moves 10 ms a look),
// none is refused.
func TestSyncServeLetsAnHonestSyncFinish(t *testing.T) {
	const n = 300
	for _, proto := range []string{SyncFeedProtocol, SyncProtocol} {
		t.Run(strings.TrimPrefix(proto, "/agentsite/"), func(t *testing.T) {
			srcKey, _ := genKey(t)
			src := &memCache{}
			fillSource(t, srcKey, n, src)
			page := syncPageSize * len(src.order[0])
			var mu sync.Mutex
			at := time.Now()
			step := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				at = at.Add(10 * time.Millisecond)
				return at
			}
			lim := SyncServeLimits{BytesPerSecond: 4 * page, Burst: page + page/4, now: step}
			s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true, SyncServe: lim})
			if proto == SyncProtocol {
				s.Host().RemoveStreamHandler(SyncFeedProtocol)
			}
			mirror := &memCache{}
			m := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour})
			connect(t, m, s)
			waitfor.Until(t, 60*time.Second, "the mirror to fill", func() bool { return mirror.held() == n })
			paced := counterValue(s.serving.limited.WithLabelValues(proto, serveActionPaced))
			refused := counterValue(s.serving.limited.WithLabelValues(proto, serveActionRefused))
			if paced == 0 || refused != 0 {
				t.Fatalf("pages paced %v, refused %v: want the budget to pace the sync, never refuse it", paced, refused)
			}
		})
	}
}

// BenchmarkRogueSyncPull: the bytes one peer pulls from a node holding
// 650 listings of ~1 KB in 20 s (ROGUE_PULL_SECONDS) when it opens 16
// sync streams (1.1.0) and keeps 4 requests in flight on each, opening a
// stream again whenever one ends (after 50 ms when it was refused).
// "unbounded" lifts the serving budget and stream limit (as before they
// existed), "default" is the node's defaults.
//
//	go test -run '^$' -bench RogueSyncPull -benchtime 1x ./p2p/
func BenchmarkRogueSyncPull(b *testing.B) {
	const listings, streams, inFlight = 650, 16, 4
	secs := 20
	if v, err := strconv.Atoi(os.Getenv("ROGUE_PULL_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	srcKey, _ := genKey(b)
	src := &memCache{}
	now := time.Now().UTC()
	desc := strings.Repeat("d", 600)
	for i := range listings {
		r, env := sealRecord(b, srcKey, fmt.Sprintf("bot-%d", i), 1, now, time.Hour, desc)
		if _, err := src.Put(context.Background(), r, env); err != nil {
			b.Fatal(err)
		}
	}
	for _, bc := range []struct {
		name string
		lim  SyncServeLimits
	}{
		{"unbounded", SyncServeLimits{BytesPerSecond: 1 << 40, Burst: 1 << 40, StreamsPerPeer: 1 << 20}},
		{"default", SyncServeLimits{}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				s, err := New(context.Background(), srcKey, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}, Cache: src, NoSyncOnConnect: true, SyncServe: bc.lim}, testLogger())
				if err != nil {
					b.Fatal(err)
				}
				rogueKey, _ := genKey(b)
				rogue, err := New(context.Background(), rogueKey, Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, testLogger())
				if err == nil {
					err = rogue.Connect(context.Background(), peer.AddrInfo{ID: s.Host().ID(), Addrs: s.Host().Addrs()})
				}
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
				var got, refused atomic.Int64
				var wg sync.WaitGroup
				for range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for ctx.Err() == nil {
							n, err := roguePullUntil(ctx, rogue, s.Host().ID(), inFlight)
							got.Add(n)
							if errors.Is(err, errSyncRefused) {
								refused.Add(1)
								select {
								case <-ctx.Done():
								case <-time.After(50 * time.Millisecond):
								}
							}
						}
					}()
				}
				wg.Wait()
				cancel()
				b.ReportMetric(float64(got.Load())/1e6, "MB-pulled")
				b.ReportMetric(float64(got.Load())*8/1e6/float64(secs), "Mbit/s")
				b.ReportMetric(float64(refused.Load()), "streams-refused")
				_ = rogue.Close()
				_ = s.Close()
			}
		})
	}
}

// roguePullUntil pulls the feed's first page over and over on
// one stream, inFlight requests ahead, until ctx ends or the stream does.
func roguePullUntil(ctx context.Context, rogue *Node, to peer.ID, inFlight int) (int64, error) {
	s, err := rogue.Host().NewStream(ctx, to, SyncFeedProtocol)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	stop := context.AfterFunc(ctx, func() { _ = s.Reset() })
	defer stop()
	req, _ := json.Marshal(feedRequest{Limit: syncPageSize})
	req = append(req, '\n')
	for range inFlight {
		if _, err := s.Write(req); err != nil {
			return 0, err
		}
	}
	r := bufio.NewReaderSize(s, maxFeedHeader)
	var total int64
	for {
		_, n, err := readFeedPage(r, feedRequest{Limit: syncPageSize})
		total += int64(n)
		if err != nil {
			return total, err
		}
		if _, err := s.Write(req); err != nil {
			return total, err
		}
	}
}

// TestSyncClientReadsARefusal: a node whose sync a peer refuses (it is
// over its budget there) gets errSyncRefused with the peer's reason, over
// both protocols, and holds the peer no strike for it.
func TestSyncClientReadsARefusal(t *testing.T) {
	srcKey, _ := genKey(t)
	src := &memCache{}
	fillSource(t, srcKey, 300, src)
	page := syncPageSize * len(src.order[0])
	lim := SyncServeLimits{BytesPerSecond: 1, Burst: page + page/2, MaxWait: 10 * time.Millisecond, now: frozen()}
	s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true, SyncServe: lim})
	m := startNode(t, nil, Config{Cache: &memCache{}, NoSyncOnConnect: true})
	connect(t, m, s)
	for name, sync := range map[string]func() error{
		"1.1.0": func() error {
			_, err := m.feedSync(context.Background(), s.Host().ID(), false, syncRoundOther)
			return err
		},
		"1.0.0": func() error { _, err := m.SyncFrom(context.Background(), s.Host().ID(), ""); return err },
	} {
		err := sync()
		if !errors.Is(err, errSyncRefused) || !strings.Contains(err.Error(), "ask again later") {
			t.Errorf("%s: sync = %v, want the peer's refusal with its reason", name, err)
		}
	}
	for _, reason := range []string{"malformed", "size", "invalid"} {
		if n := counterValue(m.metrics.rejected.WithLabelValues(pathSync, reason)); n != 0 {
			t.Errorf("the refusals counted %v rejected records (%s) against the peer", n, reason)
		}
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
	l, err := newServeLimiter(SyncServeLimits{StreamsPerPeer: 1}, now, logger, nil)
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
