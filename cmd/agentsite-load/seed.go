package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"golang.org/x/sync/errgroup"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/storeopen"
)

// Seeding parameters. The data set is deterministic: the same keys and
// records on every run, so numbers are comparable between runs.
const (
	numPublishers = 50
	seedWorkers   = 8
	dataSeed      = 2504_14411 // the paper's arXiv number
)

// publisher is one of the simulated remote nodes.
type publisher struct {
	key crypto.PrivKey
	id  string
}

// newPublishers derives n Ed25519 publisher keys from a fixed seed.
func newPublishers(n int) ([]publisher, error) {
	var seed [32]byte
	copy(seed[:], fmt.Sprint(dataSeed))
	src := rand.NewChaCha8(seed)
	pubs := make([]publisher, n)
	for i := range pubs {
		key, _, err := crypto.GenerateEd25519Key(src)
		if err != nil {
			return nil, fmt.Errorf("generate publisher key: %w", err)
		}
		pid, err := peer.IDFromPrivateKey(key)
		if err != nil {
			return nil, err
		}
		pubs[i] = publisher{key: key, id: pid.String()}
	}
	return pubs, nil
}

// seed opens db (which migrates it), fills it with n listings the way the
// network would (sealed by their publisher, verified with agent.Open, put
// through store.Sink), and closes it. Progress goes to progress every second.
func seed(ctx context.Context, db *database, n int, logger *slog.Logger, progress func(string, ...any)) error {
	start := time.Now()
	octx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	st, engine, err := storeopen.Open(octx, db.url, db.dataDir, logger)
	cancel()
	if err != nil {
		return err
	}
	defer st.Close()
	progress("opened and migrated %s store (%.1fs)", engine, time.Since(start).Seconds())

	pubs, err := newPublishers(numPublishers)
	if err != nil {
		return err
	}
	sink := &store.Sink{Store: st, SelfID: "<none>"}
	now := time.Now().UTC()

	var next, done atomic.Int64
	stopProgress := make(chan struct{})
	progressDone := make(chan struct{})
	seedStart := time.Now()
	go func() {
		defer close(progressDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stopProgress:
				return
			case <-t.C:
				progress("seeded %d/%d (%.1fs)", done.Load(), n, time.Since(seedStart).Seconds())
			}
		}
	}()

	g, gctx := errgroup.WithContext(ctx)
	for range seedWorkers {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := seedOne(gctx, sink, pubs[i%len(pubs)], i, now); err != nil {
					return fmt.Errorf("seed listing %d: %w", i, err)
				}
				done.Add(1)
			}
		})
	}
	err = g.Wait()
	close(stopProgress)
	<-progressDone
	if err != nil {
		return err
	}
	secs := time.Since(seedStart).Seconds()
	progress("seeded %d/%d (%.1fs, %.0f listings/s)", n, n, secs, float64(n)/secs)

	// The simulated publishers never send a heartbeat, so the server's
	// first sweep would turn every listing stale in the middle of the run:
	// a rewrite of every row that a live node makes once, when a host goes
	// silent, and that leaves dead rows and full GIN pending lists on
	// Postgres until autovacuum comes by. Make that change here, before
	// settling, as the sweep would.
	for _, p := range pubs {
		if err := st.UpsertNode(ctx, store.Node{PeerID: p.id, LastHeartbeat: now, Status: store.StatusStale}); err != nil {
			return fmt.Errorf("mark publisher %s stale: %w", p.id, err)
		}
		if _, err := st.SetHostStatus(ctx, p.id, store.StatusStale, now); err != nil {
			return fmt.Errorf("mark listings of %s stale: %w", p.id, err)
		}
	}
	progress("marked the listings of the %d silent publishers stale, as the server's sweep would", len(pubs))
	return nil
}

// seedOne builds, seals, verifies and delivers listing i.
func seedOne(ctx context.Context, sink *store.Sink, pub publisher, i int, now time.Time) error {
	r := rand.New(rand.NewPCG(dataSeed, uint64(i)))
	rec := newRecord(r, i, now)
	rec.Endpoints = []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pub.id, Protocol: agent.MCPProtocol}}
	if r.IntN(3) == 0 {
		rec.Endpoints = append(rec.Endpoints, agent.Endpoint{
			Kind: agent.EndpointHTTPMCP,
			URL:  fmt.Sprintf("https://node%d.agents.example.org/mcp", i%len(domains)),
		})
	}
	env, err := agent.Seal(rec, pub.key, now)
	if err != nil {
		return err
	}
	verified, err := agent.Open(env, now)
	if err != nil {
		return err
	}
	changed, err := sink.Put(ctx, verified, env)
	if err == nil && !changed {
		err = fmt.Errorf("listing %s was already stored: seeding is not on a fresh store", verified.ID)
	}
	return err
}
