package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
)

// Idle benchmark settings.
const (
	idleWindow = 90 * time.Second // measured after the planet settled: many heartbeat intervals
	idleSettle = 5 * time.Minute  // for every node to hear every other
)

// BenchmarkIdlePlanet measures what an idle planet costs each node: N whole
// nodes (embedded SQLite, two demo agents each, the default 10 s heartbeat
// interval of docs/configuration.md, in-process on loopback, bootstrapped
// through three seeds), once every node has heard every other (its nodes table holds N-1 online
// rows), then idleWindow of nothing but heartbeats, sync, DHT and GossipSub
// upkeep. Reported per node: bytes/s received and sent by its libp2p host
// (p2p.Node.Traffic, every protocol) and the share of one core it used
// (the process's user+system CPU over the window, divided by N).
//
//	go test -run '^$' -bench BenchmarkIdlePlanet -benchtime 1x -timeout 60m ./cmd/agentsite/
func BenchmarkIdlePlanet(b *testing.B) {
	for _, size := range idleSizes(b) {
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
	settleIdle(b, nodes, idleSettle, time.Now())
	for b.Loop() {
		measureIdle(b, nodes, idleEnvDuration(b, "AGENTSITE_IDLE_WINDOW", idleWindow))
	}
}

// settleIdle waits until every node hears every other (its nodes table
// holds N-1 online rows), holds every node's two demo listings, and has no
// first sync and no quota retry of a sync pending (p2p
// Node.SyncRetriesPending): the start-up fill is over, and the window
// measures an idle planet, not its tail. It logs how long that took, or,
// when the fill is not over 3 minutes after every node was heard, what is
// missing (and the window then measures with it).
func settleIdle(b *testing.B, nodes []*clusterNode, within time.Duration, began time.Time) {
	size := len(nodes)
	waitfor.Until(b, within, "every node to hear every other", func() bool {
		for _, n := range nodes {
			c, err := n.m.Store.CountNodes(b.Context())
			if err != nil || c[store.StatusOnline] < size-1 {
				return false
			}
		}
		return true
	})
	heard := time.Since(began)
	why := ""
	fill := min(within, 3*time.Minute) // past it, the window measures what is left
	deadline := time.Now().Add(fill)
	for {
		why = ""
		for i, n := range nodes {
			c, err := n.m.Store.CountByStatus(b.Context())
			if err != nil {
				why = err.Error()
				break
			}
			held := 0
			for _, v := range c {
				held += v
			}
			if p := n.m.Node.SyncRetriesPending(); held < 2*size || p > 0 {
				why = fmt.Sprintf("node %d holds %d of %d listings, %d syncs pending", i, held, 2*size, p)
				break
			}
		}
		if why == "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	if why != "" {
		b.Logf("%d nodes heard by all in %s; NOT settled %s later (measuring anyway): %s",
			size, heard.Round(time.Second), fill, why)
		return
	}
	b.Logf("%d nodes heard by all in %s, every catalogue complete and no sync pending in %s",
		size, heard.Round(time.Second), time.Since(began).Round(time.Second))
}

// measureIdle watches an idle planet for window and reports per node the
// bytes each way, CPU and bytes by protocol; it logs, every 10 s of the
// window, what catalogue sync did in it (requests by kind and round,
// answer bytes, records pulled by result), summed over the nodes.
func measureIdle(b *testing.B, nodes []*clusterNode, window time.Duration) {
	size := len(nodes)
	in0, out0 := traffic(nodes)
	byProto0 := trafficByProtocol(nodes)
	cpu0, t0 := cpuTime(b), time.Now()
	total0 := syncCounts(nodes)
	last := total0
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	end := time.After(window)
wait:
	for {
		select {
		case <-tick.C:
			now := syncCounts(nodes)
			b.Logf("sync at +%s: %s", time.Since(t0).Round(time.Second), now.minus(last))
			last = now
		case <-end: // the measurement window: an idle planet
			break wait
		case <-b.Context().Done():
			return
		}
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
	b.Logf("sync over the window (%d nodes, %s): %s", size, window, syncCounts(nodes).minus(total0))
}

// benchSync is catalogue sync's counters summed over nodes.
type benchSync struct{ requests, bytes, records map[string]int64 }

func syncCounts(nodes []*clusterNode) benchSync {
	s := benchSync{map[string]int64{}, map[string]int64{}, map[string]int64{}}
	for _, n := range nodes {
		c := n.m.Node.SyncCounts()
		for k, v := range c.Requests {
			s.requests[k] += v
		}
		for k, v := range c.Bytes {
			s.bytes[k] += v
		}
		for k, v := range c.Records {
			s.records[k] += v
		}
	}
	return s
}

func (s benchSync) minus(o benchSync) string {
	diff := func(a, b map[string]int64) string {
		keys := make([]string, 0, len(a))
		for k := range a {
			if a[k] != b[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		var out []string
		for _, k := range keys {
			out = append(out, fmt.Sprintf("%s=%d", k, a[k]-b[k]))
		}
		return "{" + strings.Join(out, " ") + "}"
	}
	return fmt.Sprintf("requests %s bytes %s records %s", diff(s.requests, o.requests), diff(s.bytes, o.bytes), diff(s.records, o.records))
}

// idleEnvDuration reads a number of seconds from the environment (def
// when unset).
func idleEnvDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	secs, err := strconv.Atoi(v)
	if err != nil || secs <= 0 {
		b.Fatalf("%s=%q: want a positive number of seconds", name, v)
	}
	return time.Duration(secs) * time.Second
}

// idleSizes is AGENTSITE_IDLE_SIZES (comma-separated), else 10, 25, 50.
func idleSizes(b *testing.B) []int {
	v := os.Getenv("AGENTSITE_IDLE_SIZES")
	if v == "" {
		return []int{10, 25, 50}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 1 {
			b.Fatalf("AGENTSITE_IDLE_SIZES=%q: want integers above 1, comma-separated", v)
		}
		out = append(out, n)
	}
	return out
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
