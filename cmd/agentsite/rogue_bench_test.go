package main

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
)

// The rogue benchmarks behind BENCHMARKS.md "The open planet": run with
// make bench-rogue. They use only what older versions of the node had too,
// so the same file measures the code before admission and page limits.

// spam signs count valid listings from each of ids fresh identities, each
// titled with word, each naming its own identity as host.
func spam(t testing.TB, ids, count int, word string) [][]byte {
	t.Helper()
	now := time.Now().UTC()
	var out [][]byte
	for i := 0; i < ids; i++ {
		key, _, err := crypto.GenerateEd25519Key(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := peer.IDFromPrivateKey(key)
		for j := 0; j < count; j++ {
			r := agent.Record{
				Name: fmt.Sprintf("%s-spam-%d", word, j), DisplayName: fmt.Sprintf("%s spam %d", strings.ToUpper(word[:1])+word[1:], j),
				Description: word + " " + word + " best " + word, Tags: []string{word}, Version: "1.0.0",
				Endpoints: []agent.Endpoint{{Kind: agent.EndpointLibp2pMCP, PeerID: pid.String(), Protocol: agent.MCPProtocol}},
				Seq:       1, IssuedAt: now, ExpiresAt: now.Add(time.Hour),
			}
			env, err := agent.Seal(&r, key, now)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, env)
		}
	}
	return out
}

// servePaged makes the rogue answer catalogue sync like an honest node,
// a page of at most 64 envelopes at a time, from envs.
func (r *rogue) servePaged(envs [][]byte) {
	r.h.SetStreamHandler(p2p.SyncProtocol, func(s network.Stream) {
		defer s.Close()
		br := bufio.NewReader(s)
		enc := json.NewEncoder(s)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return
			}
			var req struct {
				After int64 `json:"after"`
			}
			_ = json.Unmarshal(line, &req)
			from := int(req.After)
			to := min(from+64, len(envs))
			next := int64(to)
			if to == len(envs) {
				next = 0
			}
			if err := enc.Encode(map[string]any{"envelopes": envs[from:to], "next": next}); err != nil {
				return
			}
		}
	})
}

// endlessReply makes the rogue answer the first sync page with one JSON
// string of size bytes, counting in written what it got to write.
func (r *rogue) endlessReply(size int64, written *atomic.Int64) {
	r.h.SetStreamHandler(p2p.SyncProtocol, func(s network.Stream) {
		defer s.Close()
		if _, err := bufio.NewReader(s).ReadBytes('\n'); err != nil {
			return
		}
		chunk := []byte(strings.Repeat("A", 64<<10))
		if n, err := s.Write([]byte(`{"envelopes":["`)); err == nil {
			written.Add(int64(n))
		}
		for written.Load() < size {
			n, err := s.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = s.Write([]byte("\"],\"next\":0}\n"))
	})
}

// BenchmarkRogueEndlessReply: a rogue answers the first sync page with
// one JSON string of ROGUE_REPLY_MB (default 600) megabytes; reports the
// node's peak heap growth while it reads, and how much the rogue wrote.
func BenchmarkRogueEndlessReply(b *testing.B) {
	size := envInt("ROGUE_REPLY_MB", 600) << 20
	for i := 0; i < b.N; i++ {
		node := startClusterNode(b, nodeOpts{extra: []string{"--sync-on-connect=false"}})
		r := newRogue(b)
		var written atomic.Int64
		r.endlessReply(int64(size), &written)
		if err := r.h.Connect(b.Context(), peer.AddrInfo{ID: node.pid(), Addrs: node.m.Node.Host().Addrs()}); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, baseRSS := ms.HeapInuse, rss()
		var peak, peakRSS atomic.Uint64
		done := make(chan struct{})
		go func() {
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					var m runtime.MemStats
					runtime.ReadMemStats(&m)
					if m.HeapInuse > peak.Load() {
						peak.Store(m.HeapInuse)
					}
					if r := rss(); r > peakRSS.Load() {
						peakRSS.Store(r)
					}
				}
			}
		}()
		_, err := node.m.Node.SyncFrom(b.Context(), r.id, "")
		close(done)
		b.ReportMetric(float64(peak.Load()-min(base, peak.Load()))/(1<<20), "peak_heap_MB")
		b.ReportMetric(float64(baseRSS)/(1<<20), "rss_before_MB")
		b.ReportMetric(float64(max(peakRSS.Load(), baseRSS))/(1<<20), "peak_rss_MB")
		b.ReportMetric(float64(written.Load())/(1<<20), "rogue_wrote_MB")
		b.Logf("sync ended: %v", err)
	}
}

// BenchmarkRogueSpamRank: a rogue serves ROGUE_SPAM (default 10,000)
// valid listings of ROGUE_IDS (default 100) never-heard publishers, all
// about "weather", to a node that also holds an honest, online weather
// agent of another node; reports that agent's rank for "weather" and how
// many spam listings the node kept.
func BenchmarkRogueSpamRank(b *testing.B) {
	total, ids := envInt("ROGUE_SPAM", 10_000), envInt("ROGUE_IDS", 100)
	envs := spam(b, ids, total/ids, "weather")
	for i := 0; i < b.N; i++ {
		a := startClusterNode(b, nodeOpts{ttl: 10 * time.Minute, heartbeat: 2 * time.Second})
		n := startClusterNode(b, nodeOpts{ttl: 10 * time.Minute, heartbeat: 2 * time.Second, bootstrap: []string{a.addr()}, extra: []string{"--sync-on-connect=false"}})
		weather := a.register("weather-bot", "weather")
		waitfor.Until(b, 30*time.Second, "the honest agent online on the node", func() bool {
			_, ok := n.agentIDs("online")[weather.ID]
			return ok
		})
		r := newRogue(b)
		r.servePaged(envs)
		if err := r.h.Connect(b.Context(), peer.AddrInfo{ID: n.pid(), Addrs: n.m.Node.Host().Addrs()}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for {
			// Fresh syncs until the rogue has nothing more to place (a
			// node that stops a sync over quota is asked again, as the
			// rogue would).
			c, err := n.m.Node.SyncFrom(b.Context(), r.id, "")
			if c == 0 || err == nil {
				break
			}
		}
		b.Logf("sync of %d spam listings took %s", total, time.Since(start).Round(time.Millisecond))
		kept := len(n.agentIDs("all")) - 1
		b.ReportMetric(float64(rankOf(b, n, "weather", weather.ID)), "honest_rank")
		b.ReportMetric(float64(kept), "spam_kept")
	}
}

// rankOf pages through n's default search for q until id shows up.
func rankOf(tb testing.TB, n *clusterNode, q, id string) int {
	rank, cursor := 0, ""
	for {
		code, body := n.api("GET", "/api/v1/agents?limit=100&q="+url.QueryEscape(q)+"&cursor="+url.QueryEscape(cursor), nil)
		if code != http.StatusOK {
			tb.Fatalf("search: %d %s", code, body)
		}
		var page struct {
			Agents []struct {
				ID string `json:"id"`
			} `json:"agents"`
			NextCursor string `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			tb.Fatal(err)
		}
		for _, a := range page.Agents {
			rank++
			if a.ID == id {
				return rank
			}
		}
		if page.NextCursor == "" {
			return -1
		}
		cursor = page.NextCursor
	}
}

// rss is the process's resident set in bytes (/proc/self/statm), 0 where
// there is none.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
