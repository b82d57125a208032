package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// metricsScrape is one /metrics body, read once and queried many times.
type metricsScrape struct {
	t    testing.TB
	body []byte
}

// scrape reads n's /metrics.
func (n *clusterNode) scrape() metricsScrape {
	n.t.Helper()
	var body []byte
	// A scrape fails (500) when a store-backed collector times out, which a
	// loaded test machine can make happen; try again.
	waitfor.Until(n.t, 30*time.Second, "a /metrics scrape", func() bool {
		req, _ := http.NewRequestWithContext(n.t.Context(), "GET", n.m.HTTPURL()+"/metrics", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			n.t.Fatalf("GET /metrics: %v", err)
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	})
	return metricsScrape{t: n.t, body: body}
}

// metric sums the samples of the Prometheus series name on n's /metrics
// whose labels include every pair in labels ("path", "sync", ...).
func (n *clusterNode) metric(name string, labels ...string) float64 {
	n.t.Helper()
	return n.scrape().sum(name, labels...)
}

// sum adds up the samples of series name whose labels include every pair.
func (m metricsScrape) sum(name string, labels ...string) float64 {
	var want []string
	for i := 0; i+1 < len(labels); i += 2 {
		want = append(want, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(m.body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		sname, lbls, _ := strings.Cut(series, "{")
		if sname != name {
			continue
		}
		match := true
		for _, w := range want {
			if !strings.Contains(lbls, w) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			m.t.Fatalf("metric %s: bad value in %q", name, line)
		}
		total += v
	}
	return total
}

// catalogue is n's view of the network: agent id → seq, over every status.
func (n *clusterNode) catalogue() map[string]uint64 {
	out := map[string]uint64{}
	for id, a := range n.agentIDs("all") {
		out[id] = a.Seq
	}
	return out
}

// hasAll reports whether n lists every id in ids (any status).
func (n *clusterNode) hasAll(ids ...string) bool {
	got := n.agentIDs("all")
	for _, id := range ids {
		if _, ok := got[id]; !ok {
			return false
		}
	}
	return true
}

func (n *clusterNode) pid() peer.ID {
	id, err := peer.Decode(n.peerID())
	if err != nil {
		n.t.Fatal(err)
	}
	return id
}

// connected reports whether n has a live connection to p.
func (n *clusterNode) connected(p peer.ID) bool {
	return n.m.Node.Host().Network().Connectedness(p) == network.Connected
}

// rejectedTotal is every network record n rejected, on every path, except
// outdated seqs (reason "replay"), which honest peers that lag behind send
// too.
func (n *clusterNode) rejectedTotal() float64 {
	return n.metric("agentsite_p2p_records_rejected_total") - n.metric("agentsite_p2p_records_rejected_total", "reason", "replay")
}

// rejectedSeries is every non-zero series of the rejected counter, by path
// and reason, for a failure message to say why.
func (n *clusterNode) rejectedSeries() []string {
	n.t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(n.scrape().body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "agentsite_p2p_records_rejected_total{") && !strings.HasSuffix(line, " 0") {
			out = append(out, line)
		}
	}
	return out
}

// knownLeaks are goroutines that outlive a node for reasons outside the
// network code; each names where it starts and why it is tolerated.
var knownLeaks = []string{
	// handlers.newSessionManager: scs.New() starts a MemStore (and its
	// cleanup goroutine, forever) before its Store is replaced with the
	// database store; one per node. Fix in handlers: StopCleanup the
	// default MemStore before replacing it.
	"scs/v2/memstore.(*MemStore).startCleanup",
}

// goroutines lists the stacks of the running goroutines, minus knownLeaks.
func goroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
next:
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, k := range knownLeaks {
			if strings.Contains(g, k) {
				continue next
			}
		}
		out = append(out, g)
	}
	return out
}

// checkNoLeaks records the goroutines running now and, when the test ends
// (after every node started later has been closed: cleanups run last in,
// first out), waits for their number to come back down.
func checkNoLeaks(t *testing.T) {
	t.Helper()
	before := len(goroutines())
	t.Cleanup(func() { waitGoroutines(t, before) })
}

// waitGoroutines waits until no more than before goroutines (and a little
// slack) run, and fails the test with their stacks if they do not.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	const slack = 2 // the test's own cleanup machinery, a finishing timer
	deadline := time.Now().Add(15 * time.Second)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		now := goroutines()
		if len(now) <= before+slack {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("goroutines: %d before the nodes started, %d after they closed:\n%s", before, len(now), strings.Join(now, "\n\n"))
			return
		}
		time.Sleep(delay) // polling interval
	}
}

// portsOf is every TCP address n listens on (HTTP and libp2p).
func (n *clusterNode) portsOf() []string {
	out := []string{n.m.listener.Addr().String()}
	for _, a := range n.m.Node.Host().Addrs() {
		s := a.String() // /ip4/127.0.0.1/tcp/PORT
		parts := strings.Split(s, "/")
		if len(parts) >= 5 && parts[1] == "ip4" && parts[3] == "tcp" {
			out = append(out, net.JoinHostPort(parts[2], parts[4]))
		}
	}
	return out
}

// portsReleased reports whether every address can be listened on again.
func portsReleased(addrs []string) bool {
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}
