package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/protocol/circuitv2/client"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/cmd/internal/nattest"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// BenchmarkNAT measures, behind the netns NATs of TestNAT: the time from
// H1's start to its first relay reservation and to its first direct
// connection (hole punch), chat turns H2 → H1 direct and over the relay
// (p50, p99), and what 50 reserved peers cost the relay P (CPU, memory).
// Run with make bench-nat; results go to BENCHMARKS.md.
func BenchmarkNAT(b *testing.B) {
	nattest.Require(b)
	const turns = 100
	pl := &natPlanet{t: b, root: b, bin: nattest.Binary(b), dir: b.TempDir(), hPort: 4001}
	pl.top = nattest.Build(b, nattest.EndpointIndependent)
	pl.startP()
	pl.pID = pl.p.MustInfo(b).PeerID
	pl.q = nattest.Start(b, pl.bin, nattest.NodeSpec{Name: "Q", Netns: pl.top.Q, DataDir: filepath.Join(pl.dir, "q", "data"), P2PPort: 4001,
		Bootstrap: []string{pl.bootAddr()}, Extra: []string{"--relay-service=false", "--demo-agents=false"}})
	pl.startHomes()
	reserved := pl.waitReserved(pl.h1, pl.started["H1"])
	pl.waitReserved(pl.h2, pl.started["H2"])
	code, body, err := pl.h1.Do("POST", "/api/v1/agents", apiwire.AgentInput{Name: "nat-echo", DisplayName: "NAT Echo",
		Description: "Echo behind a NAT.", Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}})
	if err != nil || code != 201 {
		b.Fatalf("register: %d %v %s", code, err, body)
	}
	pl.agentOnH1 = jsonField(body, "id")
	nattest.Eventually(b, 60*time.Second, 100*time.Millisecond, "agent on H2", func() (bool, string) {
		code, _, _ := pl.h2.Do("GET", "/api/v1/agents/"+pl.agentOnH1, nil)
		return code == 200, strconv.Itoa(code)
	})
	pl.chatOK("first")
	nattest.Eventually(b, 60*time.Second, 50*time.Millisecond, "direct", func() (bool, string) {
		info, _ := pl.h2.Info()
		s, _ := pl.h2.Metric("agentsite_p2p_hole_punches_total", `result="success"`)
		s1, _ := pl.h1.Metric("agentsite_p2p_hole_punches_total", `result="success"`)
		return s+s1 > 0 && info.RelayedPeers == 0, ""
	})
	direct := time.Since(pl.started["H1"])
	var punch []string
	for _, h := range []*nattest.Node{pl.h1, pl.h2} {
		punch = append(punch, h.LogLines("hole punch finished")...)
	}
	directTurns := timeTurns(b, pl, turns)

	// Over the relay: symmetric NATs, where hole punching cannot work.
	pl.top.SetNAT(nattest.Symmetric)
	pl.h1.Stop()
	pl.h2.Stop()
	pl.hPort = 4101
	pl.startHomes()
	pl.waitReserved(pl.h1, pl.started["H1"])
	pl.waitReserved(pl.h2, pl.started["H2"])
	pl.chatOK("warm")
	relayTurns := timeTurns(b, pl, turns)
	if info := pl.h2.MustInfo(b); info.RelayedPeers < 1 {
		b.Fatalf("H2 not relayed: %+v", info)
	}

	b.ReportMetric(float64(reserved.Milliseconds()), "ms-to-reservation")
	b.ReportMetric(float64(direct.Milliseconds()), "ms-to-direct")
	fmt.Printf("\nBehind NAT (netns, nftables masquerade; P relay, H1 and H2 at home)\n")
	fmt.Printf("H1 start → first reservation on P: %s\n", reserved.Round(time.Millisecond))
	fmt.Printf("H1 start → first direct connection to H2 (H2's first turn right after its reservation): %s\n", direct.Round(time.Millisecond))
	for _, l := range punch {
		fmt.Println("  " + l)
	}
	fmt.Printf("chat turn H2 → H1 direct (%d turns): p50 %s p99 %s\n", turns, pct(directTurns, 50), pct(directTurns, 99))
	fmt.Printf("chat turn H2 → H1 over the relay, symmetric NATs (%d turns): p50 %s p99 %s\n", turns, pct(relayTurns, 50), pct(relayTurns, 99))
}

// BenchmarkNATRelayCost measures what 50 reserved peers cost the relay P
// (an agentsite node on the internet bridge): its CPU while they reserve
// and over 30 s of holding them, and its resident memory.
func BenchmarkNATRelayCost(b *testing.B) {
	nattest.Require(b)
	pl := &natPlanet{t: b, root: b, bin: nattest.Binary(b), dir: b.TempDir(), hPort: 4001}
	pl.top = nattest.Build(b, nattest.EndpointIndependent)
	pl.startP()
	pl.pID = pl.p.MustInfo(b).PeerID
	pl.q = nattest.Start(b, pl.bin, nattest.NodeSpec{Name: "Q", Netns: pl.top.Q, DataDir: filepath.Join(pl.dir, "q", "data"), P2PPort: 4001,
		Bootstrap: []string{pl.bootAddr()}, Extra: []string{"--relay-service=false", "--demo-agents=false"}})
	nattest.Eventually(b, 60*time.Second, 250*time.Millisecond, "P public", func() (bool, string) {
		info, err := pl.p.Info()
		return err == nil && info.Reachability == "public", ""
	})
	// The relay's cost: 50 lightweight hosts reserve a slot on P.
	idle := 30 * time.Second
	cpuB, _ := procUsage(b, pl.p)
	time.Sleep(idle) // a measurement window (P without reservations), not a wait for a condition
	cpu0, rss0 := procUsage(b, pl.p)
	// 10 sites with 5 peers each (the relay allows 8 reservations and the
	// resource manager 8 connections per IP address).
	nss, addrs := pl.top.AddClients(10)
	total := 0
	for i, ns := range nss {
		helper := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestRelayClientsHelper$")
		helper.Env = append(os.Environ(), "NATTEST_RELAY="+pl.bootAddr(), "NATTEST_RELAY_CLIENTS=5", "NATTEST_RELAY_CLIENT_ADDR="+addrs[i])
		stdin, _ := helper.StdinPipe()
		stdout, _ := helper.StdoutPipe()
		helper.Stderr = os.Stderr
		if err := helper.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = stdin.Close(); _ = helper.Wait() })
		n, _ := strconv.Atoi(strings.TrimSpace(waitLine(b, stdout, "RESERVED ", 120*time.Second)))
		total += n
	}
	got := strconv.Itoa(total)
	cpu1, rss1 := procUsage(b, pl.p)
	time.Sleep(idle) // the same window with 50 reservations
	cpu2, rss2 := procUsage(b, pl.p)

	fmt.Printf("relay P: CPU %.3fs over %s without reservations; with %s reservations: %.2fs while they reserved, %.3fs over %s holding them; RSS %d MiB before, %d MiB with them (%d MiB after %s)\n",
		cpu0-cpuB, idle, strings.TrimSpace(got), cpu1-cpu0, cpu2-cpu1, idle, rss0>>20, rss1>>20, rss2>>20, idle)
}

// TestRelayClientsHelper is not a test: BenchmarkNAT runs the test binary
// with it inside a namespace, where it starts NATTEST_RELAY_CLIENTS libp2p
// hosts on NATTEST_RELAY_CLIENT_ADDR, reserves a slot on NATTEST_RELAY with each,
// prints "RESERVED n" and holds them until its stdin closes.
func TestRelayClientsHelper(t *testing.T) {
	relay, addr := os.Getenv("NATTEST_RELAY"), os.Getenv("NATTEST_RELAY_CLIENT_ADDR")
	count, _ := strconv.Atoi(os.Getenv("NATTEST_RELAY_CLIENTS"))
	if relay == "" || addr == "" || count < 1 {
		t.Skip("helper process of BenchmarkNAT")
	}
	ai, err := peer.AddrInfoFromString(relay)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for range count {
		a := addr
		h, err := libp2p.New(libp2p.ListenAddrs(ma.StringCast("/ip4/"+a+"/tcp/0"), ma.StringCast("/ip4/"+a+"/udp/0/quic-v1")), libp2p.DisableMetrics())
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := h.Connect(ctx, *ai); err != nil {
			fmt.Fprintln(os.Stderr, "connect:", err)
		} else if _, err := client.Reserve(ctx, h, *ai); err != nil {
			fmt.Fprintln(os.Stderr, "reserve:", err)
		} else {
			ok++
		}
		cancel()
	}
	fmt.Printf("RESERVED %d\n", ok)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the benchmark closes stdin
}

func timeTurns(b testing.TB, pl *natPlanet, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		pl.chatOK(fmt.Sprintf("turn %d", i))
		out = append(out, time.Since(start))
	}
	return out
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	return s[max(0, min(len(s)-1, i-1))].Round(10 * time.Microsecond)
}

// procUsage is the CPU seconds (user+system) and resident memory of a
// node's process.
func procUsage(b testing.TB, n *nattest.Node) (float64, int64) {
	b.Helper()
	pid := n.Pid()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	var rss int64
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(l)[1], 10, 64)
			rss = kb << 10
		}
	}
	return (ut + st) / 100, rss // clock ticks are 1/100 s on Linux
}

func waitLine(b testing.TB, r interface{ Read([]byte) (int, error) }, prefix string, timeout time.Duration) string {
	ch := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				ch <- strings.TrimPrefix(sc.Text(), prefix)
				return
			}
		}
		ch <- ""
	}()
	select {
	case s := <-ch:
		if s == "" {
			b.Fatal("the relay client helper ended without reserving")
		}
		return s
	case <-time.After(timeout):
		b.Fatalf("no %q from the relay client helper in %s", prefix, timeout)
		return ""
	}
}

func jsonField(body []byte, key string) string {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	s, _ := m[key].(string)
	return s
}
