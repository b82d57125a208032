package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/sqlite"
)

// txCounting is a SQLite store that counts the transactions that reach
// it: a write of its own (UpsertRecord outside a batch) or a batch.
type txCounting struct {
	*sqlite.DB
	single, batches atomic.Int64
}

func (c *txCounting) UpsertRecord(ctx context.Context, l store.Listing) error {
	c.single.Add(1)
	return c.DB.UpsertRecord(ctx, l)
}

func (c *txCounting) InBatch(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.batches.Add(1)
	return c.DB.InBatch(ctx, fn)
}

func (c *txCounting) InBatchWhole(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	c.batches.Add(1)
	return c.DB.InBatchWhole(ctx, fn)
}

// twoPages serves, over sync 1.1.0, two pages of 64 envelopes in the
// first shard and nothing in the others.
type twoPages struct {
	p2p.Cache
	pages [2][][]byte
}

func (c twoPages) SyncChanges(ctx context.Context, after int64, lo, hi string, limit int) ([][]byte, int64, bool, error) {
	switch {
	case limit == 0 || lo != "" || after >= 2000:
		return [][]byte{}, 2000, false, nil
	case after < 1000:
		return c.pages[0], 1000, true, nil
	default:
		return c.pages[1], 2000, false, nil
	}
}

// TestMirrorWritesAPageInOneTransaction: a mirror on SQLite syncing two
// pages of 64 listings writes each page in one transaction (before, one
// per listing: most of a fill's CPU), and a listing of the second page
// that the store cannot write (a valid signed record whose seq SQLite
// cannot hold) is refused alone: the other 127 are stored.
func TestMirrorWritesAPageInOneTransaction(t *testing.T) {
	ctx := t.Context()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	now := time.Now().UTC()
	var keys []crypto.PrivKey
	for range 4 {
		k, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	var pages [2][][]byte
	var bad string
	for i := range 128 {
		key := keys[i%len(keys)]
		pid, _ := peer.IDFromPrivateKey(key)
		seq := uint64(1)
		if i == 100 {
			seq = math.MaxUint64
		}
		rec := &agent.Record{
			Name: fmt.Sprintf("page-bot-%03d", i), DisplayName: fmt.Sprintf("Page bot %d", i),
			Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}},
			Seq:       seq, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		}
		env, err := agent.Seal(rec, key, now)
		if err != nil {
			t.Fatal(err)
		}
		if i == 100 {
			opened, err := agent.Open(env, now)
			if err != nil {
				t.Fatalf("the record with seq %d is not valid: %v", seq, err)
			}
			bad = opened.ID
		}
		pages[i/64] = append(pages[i/64], env)
	}
	srcDB, err := sqlite.Open(ctx, filepath.Join(dir, "source.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srcDB.Close() })
	src := startTestNode(t, p2p.Config{Cache: twoPages{&store.Sink{Store: srcDB, SelfID: "<source>"}, pages}, NoSyncOnConnect: true}, logger)

	db, err := sqlite.Open(ctx, filepath.Join(dir, "mirror.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	counted := &txCounting{DB: db}
	mirror := startTestNode(t, p2p.Config{Cache: &store.Sink{Store: counted, SelfID: "<mirror>"}, SyncInterval: time.Hour}, logger)
	if err := mirror.Connect(ctx, peer.AddrInfo{ID: src.Host().ID(), Addrs: src.Host().Addrs()}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, _, complete, err := db.SyncCursor(ctx, src.Host().ID().String(), 0)
		if err != nil {
			t.Fatal(err)
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mirror did not read the first shard to its end within 30 s")
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
	counts, err := db.CountByStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, n := range counts {
		held += n
	}
	if held != 127 {
		t.Errorf("the mirror holds %d listings, want 127 (128 less the one SQLite cannot store)", held)
	}
	if _, err := db.GetAgent(ctx, bad); err == nil {
		t.Error("the listing with a seq SQLite cannot hold was stored")
	}
	// Page 1: one transaction. Page 2: one without savepoints, rolled back
	// at the failing write, then one with a savepoint per record.
	if one, batches := counted.single.Load(), counted.batches.Load(); one != 0 || batches != 3 {
		t.Errorf("two pages took %d transactions of one listing each and %d batches; want 0 and 3", one, batches)
	}
}

func startTestNode(t *testing.T, cfg p2p.Config, logger *slog.Logger) *p2p.Node {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ListenAddrs = []string{"/ip4/127.0.0.1/tcp/0"}
	node, err := p2p.New(context.Background(), key, cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = node.Close() })
	return node
}
