package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
)

// Propagation benchmark settings.
const (
	benchSeeds      = 3                      // nodes everyone else bootstraps through
	benchTargets    = 5                      // agents registered before timing, the DHT look-up targets
	benchPoll       = time.Millisecond       // store polling interval while waiting for a record
	benchPropWait   = 30 * time.Second       // a record that takes longer than this fails the run
	benchLookupWait = 10 * time.Second       // per DHT look-up, as p2p.Node.Lookup allows
	benchSettleWait = 3 * time.Minute        // for the planet to form before timing starts
	benchHeartbeat  = 10 * time.Second       // docs/architecture.md defaults, not the cluster tests' fast ones
	benchTTL        = time.Hour              // so no refresh re-announces during the run
	benchMinRT      = 4                      // DHT routing table entries each node needs before timing
	benchNetworkKey = uint64(2504_14411_000) // rng seed: every run picks the same hosts
)

// BenchmarkPropagation measures, on planets of 5, 10, 20 and 50 whole nodes
// (embedded SQLite, started in-process by the cluster harness, all on
// loopback, bootstrapped through three seed nodes), how long a registration
// on a random node takes to reach every node's store, and what DHT look-ups
// cost: GetValue of an agent record and FindProviders of a tag, each asked by
// a random node that does not host the agent. Each iteration registers one
// agent and does one look-up of each kind; ns/op is the whole iteration.
// Run it with a fixed count (b.Loop runs the setup once per size):
//
//	go test -run '^$' -bench BenchmarkPropagation -benchtime 20x -timeout 30m ./cmd/agentsite/
//
// Reported: prop-p50-ms/prop-p99-ms (registration to the last node's store,
// polled every millisecond), get-p50-ms/get-p99-ms (DHT GetValue, full
// Kademlia look-up as p2p.Node.Lookup does), findprov-p50-ms/findprov-p99-ms
// (time to the first provider of a tag), lookup-failures, goroutines/node and
// heap-MB/node (HeapInuse after GC, above the pre-planet baseline, divided by
// the node count).
func BenchmarkPropagation(b *testing.B) {
	for _, size := range []int{5, 10, 20, 50} {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) { benchPropagation(b, size) })
	}
}

// benchAgent is an agent the benchmark registered.
type benchAgent struct {
	id, tag string
	host    int
}

func benchPropagation(b *testing.B, size int) {
	ctx := b.Context()
	rng := rand.New(rand.NewPCG(benchNetworkKey, uint64(size)))
	baseG, baseHeap := runtime.NumGoroutine(), heapInuse()

	began := time.Now()
	nodes := startBenchPlanet(b, size, rng)
	waitfor.Until(b, benchSettleWait, "every node to be ready, connected and to fill its DHT routing table", func() bool {
		for _, n := range nodes {
			if !n.m.Node.Ready() || n.m.Node.PeerCount() == 0 || n.m.Node.DHT().RoutingTable().Size() < min(size-1, benchMinRT) {
				return false
			}
		}
		return true
	})

	// Look-up targets: registered and confirmed in the DHT before timing, so
	// look-ups measure a settled network, not a put still on its way.
	targets := make([]benchAgent, 0, benchTargets)
	for i := range benchTargets {
		a := benchRegister(b, nodes, rng.IntN(size), fmt.Sprintf("target-%d", i))
		benchWaitEverywhere(ctx, b, nodes, a.id, time.Now())
		targets = append(targets, a)
	}
	for _, a := range targets {
		asker := nodes[otherNode(rng, size, a.host)]
		waitfor.Until(b, benchSettleWait, "the DHT to serve "+a.id+" and the providers of "+a.tag, func() bool {
			_, gerr := dhtGet(ctx, asker, a.id)
			_, ferr := dhtFindProvider(ctx, asker, a.tag)
			return gerr == nil && ferr == nil
		})
	}
	b.Logf("%d nodes up and settled in %s", size, time.Since(began).Round(time.Millisecond))
	goroutines := float64(runtime.NumGoroutine()-baseG) / float64(size)
	heapMB := float64(heapInuse()-baseHeap) / float64(size) / (1 << 20)

	var prop, get, find []time.Duration
	failures := 0
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		a := benchRegister(b, nodes, rng.IntN(size), fmt.Sprintf("bench-%d", i))
		prop = append(prop, benchWaitEverywhere(ctx, b, nodes, a.id, start))

		t := targets[rng.IntN(len(targets))]
		asker := nodes[otherNode(rng, size, t.host)]
		if d, err := dhtGet(ctx, asker, t.id); err != nil {
			failures++
			b.Logf("GetValue %s from %s: %v", t.id, asker.peerID(), err)
		} else {
			get = append(get, d)
		}
		if d, err := dhtFindProvider(ctx, asker, t.tag); err != nil {
			failures++
			b.Logf("FindProviders %s from %s: %v", t.tag, asker.peerID(), err)
		} else {
			find = append(find, d)
		}
	}

	b.ReportMetric(percentileMS(prop, 0.50), "prop-p50-ms")
	b.ReportMetric(percentileMS(prop, 0.99), "prop-p99-ms")
	b.ReportMetric(percentileMS(get, 0.50), "get-p50-ms")
	b.ReportMetric(percentileMS(get, 0.99), "get-p99-ms")
	b.ReportMetric(percentileMS(find, 0.50), "findprov-p50-ms")
	b.ReportMetric(percentileMS(find, 0.99), "findprov-p99-ms")
	b.ReportMetric(float64(failures), "lookup-failures")
	b.ReportMetric(goroutines, "goroutines/node")
	b.ReportMetric(heapMB, "heap-MB/node")
}

// startBenchPlanet starts size nodes: the first benchSeeds form the seed set
// (each bootstrapping through the first), every other node bootstraps
// through two random seeds.
func startBenchPlanet(b *testing.B, size int, rng *rand.Rand) []*clusterNode {
	b.Helper()
	opts := func(boot ...string) nodeOpts {
		return nodeOpts{bootstrap: boot, extra: []string{
			"--heartbeat-interval", benchHeartbeat.String(), "--record-ttl", benchTTL.String(),
		}}
	}
	nodes := make([]*clusterNode, 0, size)
	nodes = append(nodes, startClusterNode(b, opts()))
	seeds := min(benchSeeds, size)
	for i := 1; i < size; i++ {
		var boot []string
		if i < seeds {
			boot = []string{nodes[0].addr()}
		} else {
			x := rng.IntN(seeds)
			y := (x + 1 + rng.IntN(seeds-1)) % seeds
			boot = []string{nodes[x].addr(), nodes[y].addr()}
		}
		nodes = append(nodes, startClusterNode(b, opts(boot...)))
	}
	return nodes
}

// benchRegister registers an agent with a tag of its own on nodes[host],
// in-process through the same handler code the API uses (the API's per-IP
// rate limit would otherwise throttle the loop).
func benchRegister(b *testing.B, nodes []*clusterNode, host int, name string) benchAgent {
	b.Helper()
	tag := "t-" + name
	l, err := nodes[host].m.Server.Registry.EnsureOperatorAgent(b.Context(), registry.Input{
		Name: name, DisplayName: name, Description: "Propagation benchmark agent.",
		Tags:    []string{tag},
		Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	})
	if err != nil {
		b.Fatalf("register %s on node %d: %v", name, host, err)
	}
	return benchAgent{id: l.Record.ID, tag: tag, host: host}
}

// benchWaitEverywhere polls every node's store until each has id and
// returns the time from start until the last one did.
func benchWaitEverywhere(ctx context.Context, b *testing.B, nodes []*clusterNode, id string, start time.Time) time.Duration {
	b.Helper()
	pending := make([]*clusterNode, len(nodes))
	copy(pending, nodes)
	for {
		keep := pending[:0]
		for _, n := range pending {
			_, err := n.m.Store.GetAgent(ctx, id)
			switch {
			case errors.Is(err, store.ErrNotFound):
				keep = append(keep, n)
			case err != nil:
				b.Fatalf("GetAgent on %s: %v", n.peerID(), err)
			}
		}
		pending = keep
		if len(pending) == 0 {
			return time.Since(start)
		}
		if time.Since(start) > benchPropWait {
			b.Fatalf("%d of %d nodes still lack %s after %s", len(pending), len(nodes), id, benchPropWait)
		}
		time.Sleep(benchPoll) // polling interval, not a wait for an outcome
	}
}

// dhtGet times a DHT GetValue of an agent record.
func dhtGet(ctx context.Context, n *clusterNode, id string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, benchLookupWait)
	defer cancel()
	start := time.Now()
	if _, err := n.m.Node.DHT().GetValue(ctx, "/agent/"+id); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// dhtFindProvider times the DHT's answer to "who provides tag" up to the
// first provider.
func dhtFindProvider(ctx context.Context, n *clusterNode, tag string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, benchLookupWait)
	defer cancel()
	start := time.Now()
	for range n.m.Node.DHT().FindProvidersAsync(ctx, p2p.TagCID(tag), 1) {
		return time.Since(start), nil
	}
	return 0, fmt.Errorf("no provider of tag %q within %s", tag, benchLookupWait)
}

// otherNode picks a random node index other than not.
func otherNode(rng *rand.Rand, size, not int) int {
	return (not + 1 + rng.IntN(size-1)) % size
}

// percentileMS is the nearest-rank percentile p of ds in milliseconds (NaN
// without samples). Over 20 samples p99 is the maximum.
func percentileMS(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := max(int(math.Ceil(p*float64(len(s))))-1, 0)
	return float64(s[i]) / float64(time.Millisecond)
}

// heapInuse is the heap in use after a full collection.
func heapInuse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
