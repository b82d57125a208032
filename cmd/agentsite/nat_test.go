package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/cmd/internal/nattest"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// natPlanet is the NAT topology with its four nodes: P (public, the
// bootstrap node and relay), Q (public helper for AutoNAT), H1 and H2 at
// home behind NAT1 and NAT2.
type natPlanet struct {
	t           testing.TB // the running (sub)test, for assertions
	root        testing.TB // the test the nodes and topology belong to: stopped at its end
	top         *nattest.Topology
	bin, dir    string
	p, q        *nattest.Node
	h1, h2      *nattest.Node
	pID         string
	hPort       int // the homes' libp2p port (changed when they restart)
	started     map[string]time.Time
	agentOnH1   string
	holePunched time.Duration
}

func (pl *natPlanet) bootAddr() string { return "/ip4/" + nattest.PublicP + "/tcp/4001/p2p/" + pl.pID }

func (pl *natPlanet) startP() {
	pl.p = nattest.Start(pl.t, pl.bin, nattest.NodeSpec{Owner: pl.root, Name: "P", Netns: pl.top.P, DataDir: filepath.Join(pl.dir, "p", "data"), P2PPort: 4001})
}

func (pl *natPlanet) startHomes() {
	boot := []string{pl.bootAddr()}
	pl.started = map[string]time.Time{"H1": time.Now()}
	pl.h1 = nattest.Start(pl.t, pl.bin, nattest.NodeSpec{Owner: pl.root, Name: "H1", Netns: pl.top.H1, DataDir: filepath.Join(pl.dir, "h1", "data"), P2PPort: pl.hPort, Bootstrap: boot})
	pl.started["H2"] = time.Now()
	pl.h2 = nattest.Start(pl.t, pl.bin, nattest.NodeSpec{Owner: pl.root, Name: "H2", Netns: pl.top.H2, DataDir: filepath.Join(pl.dir, "h2", "data"), P2PPort: pl.hPort, Bootstrap: boot})
}

// waitReserved waits until h is private and holds a reservation on P;
// it returns how long that took since h started.
func (pl *natPlanet) waitReserved(h *nattest.Node, since time.Time) time.Duration {
	pl.t.Helper()
	// A reservation needs AutoNAT v1 to call the node private: one probe,
	// 15 s (the server's dial-back timeout). When a probe ends in any other
	// error (seen under load when a connection closes during the dial-back)
	// go-libp2p leaves the node unknown and probes again only after its
	// fixed 90 s retry interval, which no option changes; the deadline
	// covers that second probe.
	nattest.Eventually(pl.t, 150*time.Second, 250*time.Millisecond, h.Spec.Name+" private with a reservation on P", func() (bool, string) {
		info, err := h.Info()
		if err != nil {
			return false, err.Error()
		}
		ok := info.Reachability == "private" && hasRelayOn(info.RelayAddrs, pl.pID)
		return ok, fmt.Sprintf("reachability %s, relay addrs %v", info.Reachability, info.RelayAddrs)
	})
	return time.Since(since)
}

func hasRelayOn(addrs []string, relay string) bool {
	for _, a := range addrs {
		if strings.Contains(a, "/p2p/"+relay+"/p2p-circuit/p2p/") {
			return true
		}
	}
	return false
}

// mcpStreams is how many MCP streams n opened, by connection kind.
func mcpStreams(t testing.TB, n *nattest.Node) (relayed, direct float64) {
	t.Helper()
	r, err := n.Metric("agentsite_p2p_mcp_streams_total", `conn="relayed"`)
	if err != nil {
		t.Fatal(err)
	}
	d, err := n.Metric("agentsite_p2p_mcp_streams_total", `conn="direct"`)
	if err != nil {
		t.Fatal(err)
	}
	return r, d
}

// chatOK sends one turn from h2 to H1's agent and checks the echo.
func (pl *natPlanet) chatOK(text string) {
	pl.t.Helper()
	reply, err := pl.h2.Chat(pl.agentOnH1, text)
	if err != nil {
		pl.t.Fatalf("chat H2 → H1: %v", err)
	}
	if !strings.Contains(reply, text) {
		pl.t.Fatalf("reply %q does not echo %q", reply, text)
	}
}

// TestNAT runs real nodes behind real NATs (network namespaces, nftables
// masquerade): joining, discovery, chat over the relay and then direct
// after hole punching, symmetric NAT, a relay restart and a host leaving.
// One topology is shared by the steps, in order.
func TestNAT(t *testing.T) {
	nattest.Require(t)
	if testing.Short() {
		t.Skip("the NAT tests start real nodes in namespaces; not with -short")
	}
	pl := &natPlanet{t: t, root: t, bin: nattest.Binary(t), dir: t.TempDir(), hPort: 4001}
	pl.top = nattest.Build(t, nattest.EndpointIndependent)
	// The homes cannot reach each other directly until the hole punch
	// step: the first turns must take the relay.
	pl.top.BlockBetweenHomes(true)
	defer func() {
		if t.Failed() {
			for _, n := range []*nattest.Node{pl.p, pl.q, pl.h1, pl.h2} {
				if n != nil {
					t.Logf("==== log of %s (%s)\n%s", n.Spec.Name, n.LogPath, tail(n.Log(), 80))
				}
			}
		}
	}()
	pl.startP()
	pl.pID = pl.p.MustInfo(t).PeerID
	pl.q = nattest.Start(t, pl.bin, nattest.NodeSpec{Name: "Q", Netns: pl.top.Q, DataDir: filepath.Join(pl.dir, "q", "data"), P2PPort: 4001,
		Bootstrap: []string{pl.bootAddr()}, Extra: []string{"--relay-service=false", "--demo-agents=false"}})
	pl.startHomes()

	ok := t.Run("joining", func(t *testing.T) {
		pl.t = t
		nattest.Eventually(t, 90*time.Second, 250*time.Millisecond, "P public", func() (bool, string) {
			info, err := pl.p.Info()
			if err != nil {
				return false, err.Error()
			}
			return info.Reachability == "public", "reachability " + info.Reachability
		})
		d1 := pl.waitReserved(pl.h1, pl.started["H1"])
		d2 := pl.waitReserved(pl.h2, pl.started["H2"])
		t.Logf("H1 private with a reservation on P %s after it started; H2 after %s", d1.Round(time.Millisecond), d2.Round(time.Millisecond))
		for _, h := range []*nattest.Node{pl.h1, pl.h2} {
			if lines := h.LogLines("first reservation"); len(lines) > 0 {
				t.Logf("%s: %s", h.Spec.Name, lines[0])
			}
		}
		// /nodes shows the same.
		code, body, err := pl.h1.Do("GET", "/nodes", nil)
		if err != nil || code != http.StatusOK || !strings.Contains(string(body), `data-testid="node-reachability" data-reachability="private">private<`) || !strings.Contains(string(body), "/p2p-circuit/p2p/") {
			t.Errorf("H1 /nodes: %d %v; reachability or relay address missing", code, err)
		}
		if v, _ := pl.h1.Metric("agentsite_p2p_reachability", `reachability="private"`); v != 1 {
			t.Errorf("H1 agentsite_p2p_reachability{private} = %v", v)
		}
	})
	if !ok {
		return
	}

	ok = t.Run("discovery", func(t *testing.T) {
		pl.t = t
		code, body, err := pl.h1.Do("POST", "/api/v1/agents", apiwire.AgentInput{
			Name: "nat-echo", DisplayName: "NAT Echo", Description: "An echo agent hosted behind a home NAT.",
			Tags: []string{"nat"}, Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
		})
		if err != nil || code != http.StatusCreated {
			t.Fatalf("register on H1: %d %v %s", code, err, body)
		}
		var a apiwire.Agent
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatal(err)
		}
		pl.agentOnH1 = a.ID
		nattest.Eventually(t, 60*time.Second, 250*time.Millisecond, "H1's agent listed on H2", func() (bool, string) {
			code, body, err := pl.h2.Do("GET", "/api/v1/agents/"+a.ID, nil)
			if err != nil {
				return false, err.Error()
			}
			return code == http.StatusOK, fmt.Sprintf("%d %.200s", code, body)
		})
	})
	if !ok {
		return
	}

	ok = t.Run("chat over the relay", func(t *testing.T) {
		pl.t = t
		r0, d0 := mcpStreams(t, pl.h2)
		start := time.Now()
		// H1's relay address reaches the others through identify and the
		// DHT a moment after its reservation; the first turn may come
		// before it anywhere (ConnectHost then tries circuits through
		// H2's relays), so it gets a bounded number of tries.
		tries := 0
		nattest.Eventually(t, 30*time.Second, 500*time.Millisecond, "a first turn H2 → H1 over the relay", func() (bool, string) {
			tries++
			reply, err := pl.h2.Chat(pl.agentOnH1, "hello over the relay")
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(reply, "hello over the relay"), reply
		})
		if tries > 1 {
			t.Logf("the first relayed turn took %d tries", tries)
		}
		r1, d1 := mcpStreams(t, pl.h2)
		t.Logf("first turn H2 → H1: %s, %v MCP streams relayed, %v direct", time.Since(start).Round(time.Millisecond), r1-r0, d1-d0)
		if r1 <= r0 || d1 != d0 {
			t.Fatalf("turn with the homes cut from each other: %v streams relayed, %v direct; want relayed only", r1-r0, d1-d0)
		}
		if info := pl.h2.MustInfo(t); info.RelayedPeers < 1 {
			t.Fatalf("H2 has no relayed peer: %+v", info)
		}
		// The network picture draws the relayed link as such.
		code, body, err := pl.h2.Do("GET", "/nodes", nil)
		if err != nil || code != http.StatusOK || !strings.Contains(string(body), `data-relayed="true"`) || !strings.Contains(string(body), "connected through a relay") {
			t.Errorf("H2 /nodes: %d %v; no relayed link drawn", code, err)
		}
	})
	if !ok {
		return
	}

	ok = t.Run("direct after hole punching", func(t *testing.T) {
		pl.t = t
		// The direct path is back; a new relayed connection (H2 starts
		// again) is hole punched.
		pl.top.BlockBetweenHomes(false)
		pl.h2.Stop()
		pl.h2 = nattest.Start(pl.t, pl.bin, nattest.NodeSpec{Owner: pl.root, Name: "H2", Netns: pl.top.H2, DataDir: filepath.Join(pl.dir, "h2", "data"), P2PPort: pl.hPort, Bootstrap: []string{pl.bootAddr()}})
		start := time.Now()
		nattest.Eventually(t, 60*time.Second, 200*time.Millisecond, "H2 ↔ H1 direct after hole punching", func() (bool, string) {
			info, err := pl.h2.Info()
			if err != nil {
				return false, err.Error()
			}
			s, _ := pl.h2.Metric("agentsite_p2p_hole_punches_total", `result="success"`)
			if s > 0 && info.RelayedPeers == 0 {
				return true, ""
			}
			// A turn makes the relayed connection if nothing else has.
			_, err = pl.h2.Chat(pl.agentOnH1, "knock")
			return false, fmt.Sprintf("hole punch successes %v, H2 relayed peers %d, chat err %v", s, info.RelayedPeers, err)
		})
		pl.holePunched = time.Since(start)
		t.Logf("direct %s after H2 restarted", pl.holePunched.Round(time.Millisecond))
		for _, l := range pl.h2.LogLines("hole punch finished") {
			t.Logf("H2: %s", l)
		}
		// A turn over a relayed connection opens a stream for itself alone;
		// a direct one reuses the stream to the host, if a turn opened it
		// already. So a turn that opened no relayed stream went direct.
		r2, d2 := mcpStreams(t, pl.h2)
		pl.chatOK("hello direct")
		r3, d3 := mcpStreams(t, pl.h2)
		if r3 != r2 || d3 == 0 {
			t.Fatalf("the turn after the hole punch: %v streams relayed, %v direct (%v direct in all); want it direct", r3-r2, d3-d2, d3)
		}
	})
	if !ok {
		return
	}

	ok = t.Run("symmetric NAT via relay", func(t *testing.T) {
		pl.t = t
		pl.top.SetNAT(nattest.Symmetric)
		pl.h1.Stop()
		pl.h2.Stop()
		pl.hPort = 4101 // new ports: no connection tracked under the old mapping
		pl.startHomes()
		pl.waitReserved(pl.h1, pl.started["H1"])
		pl.waitReserved(pl.h2, pl.started["H2"])
		r0, d0 := mcpStreams(t, pl.h2)
		pl.chatOK("hello through a symmetric NAT")
		r1, d1 := mcpStreams(t, pl.h2)
		if r1 <= r0 || d1 != d0 {
			t.Fatalf("turn through symmetric NATs: %v streams relayed, %v direct; want relayed only", r1-r0, d1-d0)
		}
		if info := pl.h2.MustInfo(t); info.RelayedPeers < 1 {
			t.Fatalf("H2 has no relayed peer after the turn: %+v", info)
		}
	})
	if !ok {
		return
	}

	ok = t.Run("relay restarts", func(t *testing.T) {
		pl.t = t
		pl.p.Stop()
		restarted := time.Now()
		pl.startP()
		pl.waitReserved(pl.h1, restarted)
		d := pl.waitReserved(pl.h2, restarted)
		t.Logf("H1 and H2 reserved again on P %s after it restarted", d.Round(time.Millisecond))
		nattest.Eventually(t, 60*time.Second, 500*time.Millisecond, "chat H2 → H1 after P restarted", func() (bool, string) {
			reply, err := pl.h2.Chat(pl.agentOnH1, "hello again")
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(reply, "hello again"), reply
		})
	})
	if !ok {
		return
	}

	t.Run("host leaves", func(t *testing.T) {
		pl.t = t
		pl.h1.Stop()
		nattest.Eventually(t, 30*time.Second, 250*time.Millisecond, "H1's agent stale on H2", func() (bool, string) {
			code, body, err := pl.h2.Do("GET", "/api/v1/agents/"+pl.agentOnH1, nil)
			if err != nil {
				return false, err.Error()
			}
			var a apiwire.Agent
			_ = json.Unmarshal(body, &a)
			return code == http.StatusOK && a.Status == "stale", fmt.Sprintf("%d status %q", code, a.Status)
		})
	})
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
