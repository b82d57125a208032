package main

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
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
// network would (sealed by their publisher, delivered through store.Sink a
// page at a time, as a catalogue sync page is), and closes it. Progress
// goes to progress every few seconds.
//
// quotaCounts says where the Sink's per-publisher quota counts come from:
// quotaFromStore (the store counts, as on a node) or quotaFromSeeder
// (talliedStore).
func seed(ctx context.Context, db *database, n int, quotaCounts string, logger *slog.Logger, progress func(string, ...any)) error {
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
	var sinkStore store.Store = st
	if quotaCounts == quotaFromSeeder {
		b, ok := st.(store.Batcher)
		if !ok {
			return fmt.Errorf("the %s store runs no transactions", engine)
		}
		sinkStore = newTalliedStore(st, b)
		progress("the Sink's quota counts come from the seeder's tally (--quota-counts %s)", quotaCounts)
	}
	sink := &store.Sink{Store: sinkStore, SelfID: "<none>", MaxPerPublisher: max(n, store.DefaultMaxPerPublisher)}
	now := time.Now().UTC()
	writers := 1 // SQLite has one writer: more only wait for its lock
	if engine == "postgres" {
		writers = 4
	}
	if err := seedPages(ctx, sink, pubs, n, writers, now, progress); err != nil {
		return err
	}

	// The simulated publishers never send a heartbeat: the Sink stored
	// their listings stale (a host not heard), and each gets the node row
	// a host has once heard and then gone silent, so that the server's
	// sweep finds them stale already, not never heard (ExpireUnheard would
	// expire them all during the run). Their listings are not rewritten
	// (SetHostStatus): they are stale already, and at 1M rewriting a
	// publisher's 20,000 rows on Postgres passed the 30 s statement
	// timeout on the loaded bench machine, each rewrite leaving a dead row
	// and index entries behind.
	for _, p := range pubs {
		if err := st.UpsertNode(ctx, store.Node{PeerID: p.id, LastHeartbeat: now, Status: store.StatusStale}); err != nil {
			return fmt.Errorf("mark publisher %s stale: %w", p.id, err)
		}
	}
	progress("marked the %d silent publishers stale, as the server's sweep would (their listings are stale already)", len(pubs))
	return nil
}

// seedPage is how many listings one Sink.PutAll delivers (one
// transaction, and one statement on either engine: store.PageWriter). A
// sync page from the network holds 64; the seeder takes the PageWriter's
// largest statement, as an import's chunk is larger than a sync page too:
// at 64 the commits were a third of the seed.
const seedPage = 256

// seedProgressEvery is how often seedPages reports how far it got.
const seedProgressEvery = 5 * time.Second

// seedPages delivers listings 0..n-1 to sink, seedPage at a time: the
// records are built and sealed on every CPU, and writers goroutines hand
// the pages to sink.PutAll (one transaction each). Sealing a listing's
// record costs ~50 µs of Ed25519; the seeder does not verify the
// signatures it just made (as agent.SealOpened, which `agentsite import`
// uses): the record delivered is still the one decoded from the payload.
// Each listing must be new (a fresh store).
func seedPages(ctx context.Context, sink *store.Sink, pubs []publisher, n, writers int, now time.Time, progress func(string, ...any)) error {
	g, gctx := errgroup.WithContext(ctx)
	pages := make(chan sealedPage, 4*writers)
	var next atomic.Int64
	sealers := max(1, runtime.GOMAXPROCS(0))
	var sealing sync.WaitGroup
	for range sealers {
		sealing.Add(1)
		g.Go(func() error {
			defer sealing.Done()
			for {
				from := int(next.Add(seedPage) - seedPage)
				if from >= n {
					return nil
				}
				p, err := sealPage(pubs, from, min(from+seedPage, n), now)
				if err != nil {
					return err
				}
				select {
				case pages <- p:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
		})
	}
	go func() { sealing.Wait(); close(pages) }()

	var done atomic.Int64
	begun := time.Now()
	for range max(1, writers) {
		g.Go(func() error {
			for p := range pages {
				if err := gctx.Err(); err != nil {
					return err
				}
				if err := writePage(gctx, sink, p); err != nil {
					return err
				}
				done.Add(int64(len(p.recs)))
			}
			return nil
		})
	}
	stop := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		t := time.NewTicker(seedProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				d, secs := done.Load(), time.Since(begun).Seconds()
				rate := float64(d) / secs
				eta := "-"
				if rate > 0 {
					eta = (time.Duration(float64(int64(n)-d)/rate) * time.Second).String()
				}
				progress("seeded %d/%d (%.0fs, %.0f listings/s, %s to go)", d, n, secs, rate, eta)
			}
		}
	}()
	err := g.Wait()
	close(stop)
	<-reported
	if err != nil {
		// Let the sealers see the end; the channel is closed once they do.
		for range pages {
		}
		return err
	}
	secs := time.Since(begun).Seconds()
	progress("seeded %d/%d (%.1fs, %.0f listings/s; this process's CPU so far: %s)", n, n, secs, float64(n)/secs, cpuTime())
	return nil
}

// cpuTime is this process's CPU time so far, user and system.
func cpuTime() string {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.1fs user + %.1fs sys", time.Duration(ru.Utime.Nano()).Seconds(), time.Duration(ru.Stime.Nano()).Seconds())
}

// sealedPage is listings from..from+len(recs)-1, sealed.
type sealedPage struct {
	from int
	recs []*agent.Record
	envs [][]byte
}

// sealPage builds and seals listings from..to-1.
func sealPage(pubs []publisher, from, to int, now time.Time) (sealedPage, error) {
	p := sealedPage{from: from, recs: make([]*agent.Record, 0, to-from), envs: make([][]byte, 0, to-from)}
	for i := from; i < to; i++ {
		rec, env, err := sealOne(pubs[i%len(pubs)], i, now)
		if err != nil {
			return p, fmt.Errorf("seed listing %d: %w", i, err)
		}
		p.recs, p.envs = append(p.recs, rec), append(p.envs, env)
	}
	return p, nil
}

// writePage delivers p as one page, each listing of which must be new.
func writePage(ctx context.Context, sink *store.Sink, p sealedPage) error {
	changed, errs := sink.PutAll(ctx, p.recs, p.envs)
	for k, err := range errs {
		if err == nil && !changed[k] {
			err = fmt.Errorf("listing %s was already stored: seeding is not on a fresh store", p.recs[k].ID)
		}
		if err != nil {
			return fmt.Errorf("seed listing %d: %w", p.from+k, err)
		}
	}
	if t, ok := sink.Store.(*talliedStore); ok {
		t.written(p.recs)
	}
	return nil
}

// sealOne builds and seals listing i, and decodes the record back from
// the envelope's payload (agent.SealOpened).
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
	env, opened, err := agent.SealOpened(rec, pub.key, now)
	if err != nil {
		return nil, nil, err
	}
	return opened, env, nil
}
