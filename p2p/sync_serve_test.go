package p2p

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/agentsite/agentsite/p2p/catalogsync"
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
	return &rogueStream{s: s, proto: proto, r: bufio.NewReader(s)}
}

// ask sends n requests for the first page at once (limit 0: the head of
// the feed only, on 1.1.0).
func (rs *rogueStream) ask(t testing.TB, n, limit int) {
	t.Helper()
	var b []byte
	for range n {
		if rs.proto == SyncProtocol {
			limit = max(limit, 1)
		}
		b = append(b, rogueRequest(limit)...)
	}
	_ = rs.s.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := rs.s.Write(b); err != nil {
		t.Fatal(err)
	}
}

// next reads one answer; it returns the page's bytes on the wire.
func (rs *rogueStream) next() (int, error) {
	_ = rs.s.SetReadDeadline(time.Now().Add(20 * time.Second))
	if rs.proto == SyncProtocol {
		line, err := rs.r.ReadBytes('\n')
		if err != nil {
			return 0, rogueRefusal(line, err)
		}
		return len(line), nil
	}
	return readRoguePage(rs.r)
}

// rogueRequest is a request line for the first page, limit records, of
// either protocol (both read {after, limit}).
func rogueRequest(limit int) []byte {
	return fmt.Appendf(nil, `{"after":0,"limit":%d}`+"\n", limit)
}

// readRoguePage reads a 1.1.0 answer as the wire carries it (a header
// line {…, count}, then count frames of a uvarint length and the bytes)
// and returns its bytes on the wire.
func readRoguePage(r *bufio.Reader) (int, error) {
	line, err := r.ReadBytes('\n')
	if err != nil {
		return 0, rogueRefusal(line, err)
	}
	var h struct {
		Count int `json:"count"`
	}
	if err := json.Unmarshal(line, &h); err != nil {
		return 0, err
	}
	read := len(line)
	for range h.Count {
		size, err := binary.ReadUvarint(r)
		if err != nil {
			return read, err
		}
		if _, err := io.CopyN(io.Discard, r, int64(size)); err != nil {
			return read, err
		}
		read += binary.PutUvarint(make([]byte, binary.MaxVarintLen64), size) + int(size)
	}
	return read, nil
}

// rogueRefusal is catalogsync.ErrRefused with the server's reason when
// what was read before the end of the stream is a refusal
// ({"refused": reason}, no newline), else err.
func rogueRefusal(partial []byte, err error) error {
	if errors.Is(err, io.EOF) && bytes.HasPrefix(partial, []byte(`{"refused":`)) {
		return fmt.Errorf("%w (it said: %s)", catalogsync.ErrRefused, partial)
	}
	return err
}

// pull pipelines reqs requests for a page, then reads answers until the
// stream ends: the page bytes received, and why it ended.
func (rs *rogueStream) pull(t testing.TB, reqs int) (int, error) {
	rs.ask(t, reqs, catalogsync.PageSize)
	total := 0
	for range reqs {
		n, err := rs.next()
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
	page := catalogsync.PageSize * len(src.order[0]) // about one page's bytes
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
			lim := SyncServeLimits{BytesPerSecond: 1, Burst: budget, GroupFactor: c.groupFactor, MaxWait: 10 * time.Millisecond, Now: frozen()}
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
						if errors.Is(err, catalogsync.ErrRefused) {
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
			if n := counterValue(s.catalog.Limited(c.proto, "refused")); n == 0 {
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
		_, err := rs.next()
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
		if !errors.Is(err, catalogsync.ErrRefused) || !strings.Contains(err.Error(), "at most 2 sync streams") {
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
			page := catalogsync.PageSize * len(src.order[0])
			var mu sync.Mutex
			at := time.Now()
			step := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				at = at.Add(10 * time.Millisecond)
				return at
			}
			lim := SyncServeLimits{BytesPerSecond: 4 * page, Burst: page + page/4, Now: step}
			s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true, SyncServe: lim})
			if proto == SyncProtocol {
				s.Host().RemoveStreamHandler(SyncFeedProtocol)
			}
			mirror := &memCache{}
			m := startNode(t, nil, Config{Cache: mirror, SyncInterval: time.Hour})
			connect(t, m, s)
			waitfor.Until(t, 60*time.Second, "the mirror to fill", func() bool { return mirror.held() == n })
			paced := counterValue(s.catalog.Limited(proto, "paced"))
			refused := counterValue(s.catalog.Limited(proto, "refused"))
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
							if errors.Is(err, catalogsync.ErrRefused) {
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
	req := rogueRequest(catalogsync.PageSize)
	for range inFlight {
		if _, err := s.Write(req); err != nil {
			return 0, err
		}
	}
	r := bufio.NewReader(s)
	var total int64
	for {
		n, err := readRoguePage(r)
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
// over its budget there) gets catalogsync.ErrRefused with the peer's reason, over
// both protocols, and holds the peer no strike for it.
func TestSyncClientReadsARefusal(t *testing.T) {
	srcKey, _ := genKey(t)
	src := &memCache{}
	fillSource(t, srcKey, 300, src)
	page := catalogsync.PageSize * len(src.order[0])
	lim := SyncServeLimits{BytesPerSecond: 1, Burst: page + page/2, MaxWait: 10 * time.Millisecond, Now: frozen()}
	s := startNode(t, srcKey, Config{Cache: src, NoSyncOnConnect: true, SyncServe: lim})
	m := startNode(t, nil, Config{Cache: &memCache{}, NoSyncOnConnect: true})
	connect(t, m, s)
	for name, sync := range map[string]func() error{
		"1.1.0": func() error {
			_, err := m.catalog.FeedSync(context.Background(), s.Host().ID())
			return err
		},
		"1.0.0": func() error { _, err := m.SyncFrom(context.Background(), s.Host().ID(), ""); return err },
	} {
		err := sync()
		if !errors.Is(err, catalogsync.ErrRefused) || !strings.Contains(err.Error(), "ask again later") {
			t.Errorf("%s: sync = %v, want the peer's refusal with its reason", name, err)
		}
	}
	for _, reason := range []string{"malformed", "size", "invalid"} {
		if n := counterValue(m.metrics.rejected.WithLabelValues(pathSync, reason)); n != 0 {
			t.Errorf("the refusals counted %v rejected records (%s) against the peer", n, reason)
		}
	}
}
