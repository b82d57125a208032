//go:build agentsite_testnet

package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// Planet benchmark settings.
const (
	planetRTT    = 50 * time.Millisecond // every connection's round trip (p2p.Config.LinkDelay)
	planetSettle = 10 * time.Minute      // for every node to hear every other
	planetRepair = 3 * time.Minute       // a repair slower than this fails the run
)

// BenchmarkPlanet runs N whole nodes (embedded SQLite, two demo agents
// each, the default 10 s heartbeat and 30 s sync intervals of
// docs/configuration.md, in one process) whose every libp2p connection has a 50 ms round trip and a
// 100 Mbit/s link each way (p2p/linkdelay.go: this kernel has no netem),
// bootstrapped through three seeds, and reports per N:
//
//   - in-B/s/node, out-B/s/node, cpu-%/node: an idle planet, once every
//     node has heard every other, holds every listing and has no first
//     sync or quota retry pending (settleIdle), over AGENTSITE_PLANET_IDLE
//     (default 90 s); bytes of every protocol, CPU = the process's ÷ N;
//     what sync did is logged per 10 s of the window;
//   - prop-p50-ms, prop-p99-ms: a registration on a random node until the
//     last node stores it, AGENTSITE_PLANET_PROPS times (default 20);
//   - repair-s: a registration that one node never gets by gossip
//     (WithholdGossip) until that node stores it, through the periodic
//     sync.
//
// Sizes: AGENTSITE_PLANET_SIZES (default 10,50).
//
//	go test -tags agentsite_testnet -run '^$' -bench BenchmarkPlanet -benchtime 1x -timeout 90m ./cmd/agentsite/
func BenchmarkPlanet(b *testing.B) {
	for _, size := range envInts(b, "AGENTSITE_PLANET_SIZES", []int{10, 50}) {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) { benchPlanet(b, size) })
	}
}

func benchPlanet(b *testing.B, size int) {
	ctx := b.Context()
	rng := rand.New(rand.NewPCG(benchNetworkKey, uint64(size)))
	idle := time.Duration(envInts(b, "AGENTSITE_PLANET_IDLE", []int{90})[0]) * time.Second
	props := envInts(b, "AGENTSITE_PLANET_PROPS", []int{20})[0]

	opts := func(boot ...string) nodeOpts {
		// A store deadline above the default: 50 nodes in one process on
		// a loaded 2-core machine missed 5 s at start.
		return nodeOpts{bootstrap: boot, demo: true, heartbeat: benchHeartbeat, ttl: benchTTL, link: planetRTT,
			extra: []string{"--store-timeout", "30s"}}
	}
	began := time.Now()
	nodes := make([]*clusterNode, 0, size)
	nodes = append(nodes, startClusterNode(b, opts()))
	seeds := min(benchSeeds, size)
	for i := 1; i < size; i++ {
		boot := []string{nodes[0].addr()}
		if i >= seeds {
			x := rng.IntN(seeds)
			boot = []string{nodes[x].addr(), nodes[(x+1)%seeds].addr()}
		}
		nodes = append(nodes, startClusterNode(b, opts(boot...)))
	}
	settleIdle(b, nodes, planetSettle, began)
	for b.Loop() {
		stopProfile := planetProfile(b)
		measureIdle(b, nodes, idle)
		stopProfile()
		if ctx.Err() != nil {
			return
		}

		var prop []time.Duration
		for i := range props {
			start := time.Now()
			a := benchRegister(b, nodes, rng.IntN(size), fmt.Sprintf("planet-%d", i))
			prop = append(prop, benchWaitEverywhere(ctx, b, nodes, a.id, start))
		}
		b.ReportMetric(percentileMS(prop, 0.50), "prop-p50-ms")
		b.ReportMetric(percentileMS(prop, 0.99), "prop-p99-ms")

		// Repair: one node gets no gossip of records; a registration must
		// reach it by the periodic sync.
		target := rng.IntN(size)
		t := nodes[target]
		t.m.Node.WithholdGossip(func(string) bool { return true })
		start := time.Now()
		a := benchRegister(b, nodes, otherNode(rng, size, target), "planet-repair")
		for {
			_, err := t.m.Store.GetAgent(ctx, a.id)
			if err == nil {
				break
			}
			if !errors.Is(err, store.ErrNotFound) {
				b.Fatal(err)
			}
			if time.Since(start) > planetRepair {
				b.Fatalf("node %d still lacks %s after %s", target, a.id, planetRepair)
			}
			time.Sleep(10 * time.Millisecond) // polling interval
		}
		repair := time.Since(start)
		t.m.Node.WithholdGossip(nil)
		b.ReportMetric(repair.Seconds(), "repair-s")
	}
}

// planetProfile starts a CPU profile of the idle window into the file
// AGENTSITE_PLANET_CPUPROFILE names (with the size), if set.
func planetProfile(b *testing.B) (stop func()) {
	name := os.Getenv("AGENTSITE_PLANET_CPUPROFILE")
	if name == "" {
		return func() {}
	}
	f, err := os.Create(name + "." + strings.TrimPrefix(b.Name(), "BenchmarkPlanet/"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// envInts reads a comma-separated list of integers from the environment
// (def when unset).
func envInts(b *testing.B, name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			b.Fatalf("%s=%q: want positive integers, comma-separated", name, v)
		}
		out = append(out, n)
	}
	return out
}
