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
	// The simulated publishers may hold the whole catalogue between them
	// (1M listings is 20,000 each, past the Sink's default quota).
	sink := &store.Sink{Store: st, SelfID: "<none>", MaxPerPublisher: max(n, store.DefaultMaxPerPublisher)}
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
				from := int(next.Add(seedPage) - seedPage)
				if from >= n {
					return nil
				}
				if err := gctx.Err(); err != nil {
					return err
				}
				to := min(from+seedPage, n)
				if err := seedPageOf(gctx, sink, pubs, from, to, now); err != nil {
					return err
				}
				done.Add(int64(to - from))
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

// seedPage is how many listings a seed worker delivers at once, as a sync
// page delivers them (Sink.PutAll: one transaction).
const seedPage = 64

// seedPageOf builds, seals and verifies listings from..to-1 and delivers
// them as one page.
func seedPageOf(ctx context.Context, sink *store.Sink, pubs []publisher, from, to int, now time.Time) error {
	recs := make([]*agent.Record, 0, to-from)
	envs := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		rec, env, err := sealOne(pubs[i%len(pubs)], i, now)
		if err != nil {
			return fmt.Errorf("seed listing %d: %w", i, err)
		}
		recs, envs = append(recs, rec), append(envs, env)
	}
	changed, errs := sink.PutAll(ctx, recs, envs)
	for k, err := range errs {
		if err == nil && !changed[k] {
			err = fmt.Errorf("listing %s was already stored: seeding is not on a fresh store", recs[k].ID)
		}
		if err != nil {
			return fmt.Errorf("seed listing %d: %w", from+k, err)
		}
	}
	return nil
}

// sealOne builds, seals and verifies listing i.
func sealOne(pub publisher, i int, now time.Time) (*agent.Record, []byte, error) {
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
		return nil, nil, err
	}
	verified, err := agent.Open(env, now)
	if err != nil {
		return nil, nil, err
	}
	return verified, env, nil
}
