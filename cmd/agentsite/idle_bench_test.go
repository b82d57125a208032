package main

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// Idle benchmark settings.
const (
	idleWindow = 90 * time.Second // measured after the planet settled: many heartbeat intervals
	idleSettle = 5 * time.Minute  // for every node to hear every other
)

// BenchmarkIdlePlanet measures what an idle planet costs each node: N whole
// nodes (embedded SQLite, two demo agents each, DESIGN.md's 10 s heartbeat
// interval, in-process on loopback, bootstrapped through three seeds), once
// every node has heard every other (its nodes table holds N-1 online
// rows), then idleWindow of nothing but heartbeats, sync, DHT and GossipSub
// upkeep. Reported per node: bytes/s received and sent by its libp2p host
// (p2p.Node.Traffic, every protocol) and the share of one core it used
// (the process's user+system CPU over the window, divided by N).
//
//	go test -run '^$' -bench BenchmarkIdlePlanet -benchtime 1x -timeout 60m ./cmd/agentsite/
func BenchmarkIdlePlanet(b *testing.B) {
	for _, size := range []int{10, 25, 50} {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) { benchIdle(b, size) })
	}
}

func benchIdle(b *testing.B, size int) {
	rng := rand.New(rand.NewPCG(benchNetworkKey, uint64(size)))
	nodes := make([]*clusterNode, 0, size)
	opts := func(boot ...string) nodeOpts {
		return nodeOpts{bootstrap: boot, demo: true, heartbeat: benchHeartbeat, ttl: benchTTL}
	}
	nodes = append(nodes, startClusterNode(b, opts()))
	for i := 1; i < size; i++ {
		x := rng.IntN(min(benchSeeds, i))
		nodes = append(nodes, startClusterNode(b, opts(nodes[x].addr())))
	}
	eventually(b, idleSettle, "every node to hear every other", func() bool {
		for _, n := range nodes {
			c, err := n.m.Store.CountNodes(b.Context())
			if err != nil || c[store.StatusOnline] < size-1 {
				return false
			}
		}
		return true
	})
	for b.Loop() {
		in0, out0 := traffic(nodes)
		byProto0 := trafficByProtocol(nodes)
		cpu0, t0 := cpuTime(b), time.Now()
		select {
		case <-time.After(idleWindow): // the measurement window: an idle planet
		case <-b.Context().Done():
			return
		}
		in1, out1 := traffic(nodes)
		cpu1, secs := cpuTime(b), time.Since(t0).Seconds()
		perNode := float64(size) * secs
		b.ReportMetric(float64(in1-in0)/perNode, "in-B/s/node")
		b.ReportMetric(float64(out1-out0)/perNode, "out-B/s/node")
		b.ReportMetric(100*(cpu1-cpu0).Seconds()/perNode, "cpu-%/node")
		for p, v := range trafficByProtocol(nodes) {
			if d := float64(v-byProto0[p]) / perNode; d >= 1 {
				b.Logf("%s: %.0f B/s/node, in and out", p, d)
			}
		}
	}
}

func trafficByProtocol(nodes []*clusterNode) map[string]int64 {
	out := map[string]int64{}
	for _, n := range nodes {
		for p, v := range n.m.Node.TrafficByProtocol() {
			out[p] += v
		}
	}
	return out
}

func traffic(nodes []*clusterNode) (in, out int64) {
	for _, n := range nodes {
		i, o := n.m.Node.Traffic()
		in, out = in+i, out+o
	}
	return in, out
}

// cpuTime is the user and system CPU this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
