package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
)

// held counts the listings n's store holds, by status.
func (n *clusterNode) held() (total int, byStatus map[string]int) {
	n.t.Helper()
	counts, err := n.m.Store.CountByStatus(n.t.Context())
	if err != nil {
		n.t.Fatalf("count listings: %v", err)
	}
	for _, c := range counts {
		total += c
	}
	return total, counts
}

// TestMirrorHoldsABigHost: a fresh mirror of a host bigger than the
// per-publisher quota holds all of it: the host is heard, its heartbeats
// claim all its agents, and its quota grows to that. Before, the mirror
// stopped at the quota and said so only in /metrics. The sizes are a
// tenth of the defaults' (2,000 agents against a quota of 1,000, where
// BenchmarkMirrorBigHost has 20,000 and 50,000 against 10,000): the same road, at a
// cost a loaded test machine carries.
func TestMirrorHoldsABigHost(t *testing.T) {
	const agents = 2_000
	// A sync that a loaded machine's store deadline cut short resumes at
	// the next sync interval: 5 s here, not 30.
	if held, _, _ := mirrorBigHost(t, agents, 5*time.Minute, "--sync-interval", "5s", "--max-listings-per-publisher", "1000"); held != agents {
		t.Errorf("the mirror holds %d listings, want the host's %d", held, agents)
	}
}

// mirrorBigHost imports agents into a host offline, starts it, starts a
// fresh mirror of it (with mirrorFlags), and waits (at most timeout) for the mirror to hold
// them all: it returns what the mirror holds then, how long the import
// took, and how long the mirror took from its start. Past the timeout it
// fails tb unless tb is a benchmark, which reports what was held.
func mirrorBigHost(tb testing.TB, agents int, timeout time.Duration, mirrorFlags ...string) (held int, imported, fill time.Duration) {
	t0 := time.Now()
	dir := tb.TempDir()
	var out, errw bytes.Buffer
	err := run(tb.Context(), []string{"import", "--data-dir", dir, bigHostLines(tb, agents)}, func(string) string { return "" }, &out, &errw)
	if err != nil {
		tb.Fatalf("import: %v\n%s", err, out.String())
	}
	imported = time.Since(t0)
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: time.Second}
	ho := o
	ho.dir = dir
	host := startClusterNode(tb, ho)
	if n, _ := host.held(); n != agents {
		tb.Fatalf("the host holds %d agents, want %d", n, agents)
	}
	mo := o
	mo.bootstrap = []string{host.addr()}
	mo.extra = mirrorFlags
	t1 := time.Now()
	mirror := startClusterNode(tb, mo)
	deadline := t1.Add(timeout)
	for delay := 10 * time.Millisecond; ; delay = min(delay*2, 500*time.Millisecond) {
		if held, _ = mirror.held(); held >= agents {
			return held, imported, time.Since(t1)
		}
		if time.Now().After(deadline) {
			if _, ok := tb.(*testing.B); !ok {
				_, body := mirror.api("GET", "/api/v1/node", nil)
				tb.Logf("the mirror's GET /api/v1/node: %s", body)
				tb.Fatalf("timed out after %s with %d of the host's %d agents held", timeout, held, agents)
			}
			return held, imported, time.Since(t1)
		}
		time.Sleep(delay) // polling interval, not a fixed wait for an outcome
	}
}

// bigHostLines is a JSON-lines file of n echo agents.
func bigHostLines(tb testing.TB, n int) string {
	tb.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"name":"bulk-%d","display_name":"Bulk %d","description":"One of many.","tags":["bulk"],"backend":{"kind":"builtin","builtin":"echo"}}`+"\n", i, i)
	}
	path := filepath.Join(tb.TempDir(), "agents.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// TestEvictionKeepsACutOffHost is the chain of the open planet's review:
// a mirror at --max-listings 150 holds an honest host's 40 listings; the
// host is cut off (its listings turn stale); a rogue that heartbeats its
// own id then serves 400 of its own listings. The rogue fills the free
// room and is refused the rest: the honest host was heard before it, so
// its listings outrank the rogue's, and the mirror keeps all 40. When the
// host is back they are online again. Before, the rogue's listings
// evicted every one of the host's.
func TestEvictionKeepsACutOffHost(t *testing.T) {
	o := nodeOpts{ttl: 10 * time.Minute, heartbeat: time.Second}
	hostDir := t.TempDir()
	ho := o
	ho.dir = hostDir
	host := startClusterNode(t, ho)
	mo := o
	mo.bootstrap = []string{host.addr()}
	mo.extra = []string{"--max-listings", "150"}
	mirror := startClusterNode(t, mo)
	var honest []string
	for i := range 40 {
		honest = append(honest, host.register(fmt.Sprintf("forecast-%d", i), "forecast").ID)
	}
	hostID := host.peerID()
	waitfor.Until(t, 60*time.Second, "the mirror to hold the host's 40 listings online", func() bool {
		got := mirror.agentIDs("online")
		for _, id := range honest {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	kept := func(what string) {
		t.Helper()
		all := mirror.agentIDs("all")
		if len(all) > 150 {
			t.Fatalf("%s: the mirror holds %d listings, its --max-listings is 150", what, len(all))
		}
		for _, id := range honest {
			if a, ok := all[id]; !ok || a.Status == store.StatusOffline {
				t.Fatalf("%s: the mirror lost the honest host's %s (%+v); evicted %v", what, id, a, mirror.metric("agentsite_catalogue_evicted_total"))
			}
		}
	}

	// The host is cut off: its listings turn stale on the mirror.
	host.stop()
	waitfor.Until(t, 30*time.Second, "the host's listings to turn stale on the mirror", func() bool {
		_, counts := mirror.held()
		return counts[store.StatusStale] >= len(honest)
	})

	// A rogue heartbeats its own id (so its listings are a heard host's,
	// online) and serves 400 of its own listings by sync.
	r := newRogue(t)
	var envs [][]byte
	now := time.Now().UTC()
	for i := range 400 {
		rec := agent.Record{
			Name: fmt.Sprintf("forecast-spam-%d", i), DisplayName: fmt.Sprintf("Forecast spam %d", i),
			Description: "forecast forecast best forecast", Tags: []string{"forecast"}, Version: "1.0.0",
			Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: r.id.String(), Protocol: agent.MCPProtocol}},
			Seq:       1, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		}
		env, err := agent.Seal(&rec, r.key, now)
		if err != nil {
			t.Fatal(err)
		}
		envs = append(envs, env)
	}
	r.servePaged(envs)
	r.connect(mirror)
	stopBeats := make(chan struct{})
	beatsDone := make(chan struct{})
	go func() {
		defer close(beatsDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			hb := agent.Heartbeat{PeerID: r.id.String(), Version: "rogue", AgentsHosted: len(envs), SentAt: time.Now().UTC()}
			if err := r.status.Publish(t.Context(), mustJSON(t, hb)); err != nil {
				return
			}
			select {
			case <-stopBeats:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stopBeats); <-beatsDone }()
	waitfor.Until(t, 60*time.Second, "the mirror to hear the rogue", func() bool {
		nodes, err := mirror.m.Store.GetNodes(t.Context(), []string{r.id.String()})
		return err == nil && len(nodes) == 1 && nodes[0].Status == store.StatusOnline
	})
	waitfor.Until(t, 90*time.Second, "the mirror to fill up with the rogue's listings and refuse the rest", func() bool {
		kept("during the flood")
		n, _ := mirror.held()
		return n >= 150 && mirror.metric("agentsite_catalogue_refused_total") >= 1
	})
	kept("after the flood")
	// The host is back: its listings are online again.
	ho.bootstrap = []string{mirror.addr()}
	host = startClusterNode(t, ho)
	if host.peerID() != hostID {
		t.Fatalf("the host came back as %s, was %s", host.peerID(), hostID)
	}
	waitfor.Until(t, 60*time.Second, "the host's listings to be online again on the mirror", func() bool {
		got := mirror.agentIDs("online")
		for _, id := range honest {
			if _, ok := got[id]; !ok {
				return false
			}
		}
		return true
	})
	kept("the host back")
}
