package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/searchindex"
	"github.com/agentsite/agentsite/store/sqlite"
)

// BenchmarkMirrorFill: a fresh mirror (SQLite) fills from 1 or 3 sources
// that hold the same catalogue of N listings (AGENTSITE_BENCH_MIRROR_N,
// default 10,000), over catalogue sync 1.0.0 (the whole-catalogue pull,
// "before") and 1.1.0 (cursors and shards). Reported: the seconds until
// the mirror holds every listing, and the sync bytes the mirror received
// (as the pages go on the wire), per listing and against the catalogue's
// size (the sum of its envelopes), and the CPU the process (sources and
// mirror, in one process) spent meanwhile, setup included. The mirror's
// store is a node's: SQLite, the search index and the read cache.
// AGENTSITE_BENCH_MIRROR_PROTO=1.1.0 (or 1.0.0) runs that protocol only,
// AGENTSITE_BENCH_MIRROR_SOURCES=1 (or 3) that many sources only.
// AGENTSITE_BENCH_MIRROR_SEED=FILE takes the catalogue from an SQLite
// file seeded before (agentsite-load --data-dir DIR --seed-only: its
// DIR/agentsite.db, left as it is: each source gets a copy), so that a
// 1M fill does not seed 1M first; N is then what it holds.
//
//	AGENTSITE_BENCH_MIRROR_N=100000 go test -run '^$' -bench MirrorFill -benchtime 1x ./cmd/agentsite
func BenchmarkMirrorFill(b *testing.B) {
	n := 10_000
	if v := os.Getenv("AGENTSITE_BENCH_MIRROR_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("AGENTSITE_BENCH_MIRROR_N=%q: want a positive number", v)
		}
	}
	protos := []string{p2p.SyncProtocol, p2p.SyncFeedProtocol}
	if v := os.Getenv("AGENTSITE_BENCH_MIRROR_PROTO"); v != "" { // "1.0.0" or "1.1.0": that one only
		protos = []string{"/agentsite/sync/" + v}
	}
	sourceCounts := []int{1, 3}
	if v := os.Getenv("AGENTSITE_BENCH_MIRROR_SOURCES"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			b.Fatalf("AGENTSITE_BENCH_MIRROR_SOURCES=%q: want a positive number", v)
		}
		sourceCounts = []int{k}
	}
	var (
		seed      string
		catalogue int64
	)
	if seed = os.Getenv("AGENTSITE_BENCH_MIRROR_SEED"); seed != "" {
		n, catalogue = seededCatalogue(b, seed)
	} else {
		seed, catalogue = seedMirrorCatalogue(b, filepath.Join(b.TempDir(), "seed.db"), n)
	}
	for _, proto := range protos {
		for _, sources := range sourceCounts {
			b.Run(fmt.Sprintf("proto=%s/sources=%d", filepath.Base(proto), sources), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					cpu0 := processCPU(b)
					took, received := fillMirror(b, seed, n, sources, proto == p2p.SyncProtocol)
					b.ReportMetric(took.Seconds(), "s/fill")
					b.ReportMetric((processCPU(b) - cpu0).Seconds(), "cpu-s/fill")
					b.ReportMetric(float64(received)/float64(n), "B/listing")
					b.ReportMetric(float64(received)/float64(catalogue), "x-catalogue")
				}
			})
		}
	}
}

// seedMirrorCatalogue writes n listings of 100 publishers into a fresh
// SQLite file (500 a transaction) and returns its path and the
// catalogue's size in envelope bytes.
func seedMirrorCatalogue(b *testing.B, path string, n int) (string, int64) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var keys []crypto.PrivKey
	for i := 0; i < 100; i++ {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, k)
	}
	now := time.Now().UTC()
	var size int64
	var chunk []store.Listing
	flush := func() {
		err := db.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
			for _, l := range chunk {
				if err := tx.UpsertRecord(ctx, l); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		chunk = chunk[:0]
	}
	for i := 0; i < n; i++ {
		key := keys[i%len(keys)]
		pid, _ := peer.IDFromPrivateKey(key)
		rec := &agent.Record{
			Name: fmt.Sprintf("mirror-bot-%d", i), DisplayName: fmt.Sprintf("Mirror bot %d", i),
			Description: "A listing of the mirror fill benchmark: it answers questions about weather, tides and trains, in a few sentences.",
			Tags:        []string{"bench", fmt.Sprintf("group-%d", i%50)},
			Skills:      []agent.Skill{{ID: "answer", Name: "Answer", Description: "Answers one question.", Examples: []string{"Will it rain tomorrow?"}}},
			Endpoints:   []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}},
			Seq:         1, IssuedAt: now, ExpiresAt: now.Add(2 * time.Hour),
		}
		env, err := agent.Seal(rec, key, now)
		if err != nil {
			b.Fatal(err)
		}
		verified, err := agent.Open(env, now)
		if err != nil {
			b.Fatal(err)
		}
		chunk = append(chunk, store.Listing{Record: *verified, Envelope: env, Status: store.StatusStale,
			LastSeen: now, HostPeerID: verified.HostPeerID(), UpdatedAt: now})
		if len(chunk) == 500 {
			flush()
		}
		size += int64(len(env))
	}
	flush()
	return path, size
}

// seededCatalogue returns how many listings the SQLite file at path holds
// that a source serves (unexpired, tombstones too) and their envelopes'
// size.
func seededCatalogue(b *testing.B, path string) (int, int64) {
	b.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var (
		n    int
		size sql.NullInt64
	)
	err = db.QueryRow(`SELECT count(*), sum(length(envelope)) FROM agents WHERE expires_at > ?`, time.Now().UnixNano()).Scan(&n, &size)
	if err != nil {
		b.Fatalf("AGENTSITE_BENCH_MIRROR_SEED=%s: %v", path, err)
	}
	if n == 0 {
		b.Fatalf("AGENTSITE_BENCH_MIRROR_SEED=%s holds no unexpired listing: seed it again", path)
	}
	return n, size.Int64
}

// countingCache counts the bytes of the sync pages it serves, as they go
// on the wire: 1.0.0 sends JSON lines with the envelopes in base64, 1.1.0
// a header line and raw frames.
type countingCache struct {
	p2p.Cache
	bytes *atomic.Int64
}

func pageBytes(envs [][]byte, base64 bool) int64 {
	total := int64(64) // the line's keys, feed id and numbers
	for _, e := range envs {
		if base64 {
			total += int64((len(e)+2)/3*4 + 3)
		} else {
			total += int64(len(e) + 2)
		}
	}
	return total
}

func (c countingCache) Envelopes(ctx context.Context, after int64, tag string, limit int) ([][]byte, int64, error) {
	envs, next, err := c.Cache.Envelopes(ctx, after, tag, limit)
	c.bytes.Add(pageBytes(envs, true))
	return envs, next, err
}

func (c countingCache) SyncChanges(ctx context.Context, after int64, lo, hi string, limit int) ([][]byte, int64, bool, error) {
	envs, next, more, err := c.Cache.SyncChanges(ctx, after, lo, hi, limit)
	c.bytes.Add(pageBytes(envs, false))
	return envs, next, more, err
}

func fillMirror(b *testing.B, seed string, n, sources int, legacy bool) (time.Duration, int64) {
	b.Helper()
	b.StopTimer()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := b.TempDir()
	var received atomic.Int64
	var addrs []peer.AddrInfo
	for i := 0; i < sources; i++ {
		path := filepath.Join(dir, fmt.Sprintf("source-%d.db", i))
		copyFile(b, seed, path)
		db, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = db.Close() })
		node := startBenchNode(b, p2p.Config{Cache: countingCache{&store.Sink{Store: db, SelfID: "<source>"}, &received}, NoSyncOnConnect: true, SyncServe: benchServeLimits()}, logger)
		if legacy {
			node.Host().RemoveStreamHandler(p2p.SyncFeedProtocol)
		}
		addrs = append(addrs, peer.AddrInfo{ID: node.Host().ID(), Addrs: node.Host().Addrs()})
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "mirror.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	// The mirror's store stack is a node's (app.go): the search index,
	// which catches up every second, and the read cache in front of it.
	idx := searchindex.New(db, logger)
	ictx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = idx.Run(ictx) }()
	b.Cleanup(func() { stop(); <-ran })
	mirror := startBenchNode(b, p2p.Config{
		Cache:     &store.Sink{Store: store.NewCache(idx, time.Second, 10_000), SelfID: "<mirror>", MaxPerPublisher: n},
		Admission: p2p.Admission{UnheardPerHour: 10 * n, UnheardPublishersPerHour: 1000},
	}, logger)
	b.StartTimer()
	start := time.Now()
	for _, a := range addrs {
		if err := mirror.Connect(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	deadline := start.Add(30*time.Minute + time.Duration(n)*time.Millisecond) // 1M: 47 min
	for {
		counts, err := db.CountByStatus(ctx)
		if err != nil {
			b.Fatal(err)
		}
		held := 0
		for _, c := range counts {
			held += c
		}
		if held >= n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the mirror holds %d of %d listings after %v", held, n, time.Since(start))
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	took := time.Since(start)
	b.StopTimer()
	return took, received.Load()
}

func startBenchNode(b *testing.B, cfg p2p.Config, logger *slog.Logger) *p2p.Node {
	b.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	node, err := p2p.New(context.Background(), key, cfg, logger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = node.Close() })
	return node
}

func copyFile(b *testing.B, from, to string) {
	b.Helper()
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

// processCPU is the CPU time this process has used (user + system).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchServeLimits are the sources' sync serving budgets: the defaults,
// or none with AGENTSITE_BENCH_MIRROR_SERVE=unbounded (to compare).
func benchServeLimits() p2p.SyncServeLimits {
	if os.Getenv("AGENTSITE_BENCH_MIRROR_SERVE") == "unbounded" {
		return p2p.SyncServeLimits{BytesPerSecond: 1 << 40, Burst: 1 << 40, StreamsPerPeer: 1 << 20}
	}
	return p2p.SyncServeLimits{}
}
