// Package nattest builds real NATs on this machine for tests: Linux
// network namespaces joined by veth pairs and a bridge, with nftables
// masquerade on the home routers, and runs the real agentsite binary inside
// them with `ip netns exec`.
//
// The topology (documentation prefixes only; nothing is routed out of the
// namespaces, and the root namespace gets no interface):
//
//	public node P (198.51.100.1) ─┐
//	public helper Q (198.51.100.2)┼─ "internet" bridge (its own namespace)
//	NAT1 (198.51.100.11) ─────────┤   └─ home1 192.168.1.0/24: H1 (192.168.1.2)
//	NAT2 (198.51.100.12) ─────────┘   └─ home2 192.168.2.0/24: H2 (192.168.2.2)
//
// Q exists because AutoNAT decides that a node is public only when another
// node that is not itself private dials it back: P needs one public peer
// besides the homes (whose AutoNAT service turns off once they learn they
// are private).
//
// NAT modes: EndpointIndependent masquerades keeping the source port (one
// mapping per inside address and port, for every destination: DCUtR hole
// punching can work); Symmetric masquerades with fully random ports (a new
// mapping per destination: only the relay works).
//
// Everything needs root, iproute2 and nftables: Require skips loudly
// without them, and fails under CI=true. Every wait is bounded and
// everything is torn down with t.Cleanup, also when the test fails.
package nattest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Addresses of the topology.
const (
	InternetCIDR = "198.51.100.0/24"
	PublicP      = "198.51.100.1"
	PublicQ      = "198.51.100.2"
	NAT1Public   = "198.51.100.11"
	NAT2Public   = "198.51.100.12"
	H1Addr       = "192.168.1.2"
	H2Addr       = "192.168.2.2"
)

// NATMode is how the home routers map ports.
type NATMode int

const (
	// EndpointIndependent keeps the inside port where it can, the same
	// mapping for every destination: hole punching can succeed.
	EndpointIndependent NATMode = iota
	// Symmetric picks a random port for every new connection: hole
	// punching cannot succeed, the relay still works.
	Symmetric
)

func (m NATMode) String() string {
	if m == Symmetric {
		return "symmetric"
	}
	return "endpoint-independent"
}

// Require skips the test when this machine cannot build namespaces (not
// root, no ip or nft), loudly; under CI=true it fails instead.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool+" (apt-get install "+map[string]string{"ip": "iproute2", "nft": "nftables"}[tool]+")")
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := "NAT TESTS NOT RUN: they build network namespaces and nftables NATs and need " + strings.Join(missing, ", ")
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Topology is the namespaces and links of one test run.
type Topology struct {
	t      testing.TB
	prefix string
	// Namespace names.
	Inet, P, Q, NAT1, NAT2, H1, H2 string
}

// Build makes the topology with both home routers in mode; t.Cleanup
// deletes it.
func Build(t testing.TB, mode NATMode) *Topology {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	top := &Topology{t: t, prefix: "asnat-" + id + "-"}
	top.Inet, top.P, top.Q = top.prefix+"inet", top.prefix+"p", top.prefix+"q"
	top.NAT1, top.NAT2, top.H1, top.H2 = top.prefix+"nat1", top.prefix+"nat2", top.prefix+"h1", top.prefix+"h2"
	t.Cleanup(top.teardown)
	all := []string{top.Inet, top.P, top.Q, top.NAT1, top.NAT2, top.H1, top.H2}
	for _, ns := range all {
		top.must("ip", "netns", "add", ns)
		top.must("ip", "-n", ns, "link", "set", "lo", "up")
	}
	top.must("ip", "-n", top.Inet, "link", "add", "br0", "type", "bridge")
	top.must("ip", "-n", top.Inet, "link", "set", "br0", "up")
	// The internet side: one veth per machine, its bridge end in inet.
	for i, m := range []struct{ ns, addr string }{{top.P, PublicP}, {top.Q, PublicQ}, {top.NAT1, NAT1Public}, {top.NAT2, NAT2Public}} {
		port := fmt.Sprintf("port%d", i)
		top.must("ip", "link", "add", "name", port, "netns", top.Inet, "type", "veth", "peer", "name", "wan0", "netns", m.ns)
		top.must("ip", "-n", top.Inet, "link", "set", port, "master", "br0", "up")
		top.must("ip", "-n", m.ns, "addr", "add", m.addr+"/24", "dev", "wan0")
		top.must("ip", "-n", m.ns, "link", "set", "wan0", "up")
	}
	// The homes: a veth from each router to its host, the router as the
	// host's default gateway.
	for _, h := range []struct{ nat, host, lan, gw, addr string }{
		{top.NAT1, top.H1, "192.168.1.0/24", "192.168.1.1", H1Addr},
		{top.NAT2, top.H2, "192.168.2.0/24", "192.168.2.1", H2Addr},
	} {
		top.must("ip", "link", "add", "name", "lan0", "netns", h.nat, "type", "veth", "peer", "name", "eth0", "netns", h.host)
		top.must("ip", "-n", h.nat, "addr", "add", h.gw+"/24", "dev", "lan0")
		top.must("ip", "-n", h.nat, "link", "set", "lan0", "up")
		top.must("ip", "-n", h.host, "addr", "add", h.addr+"/24", "dev", "eth0")
		top.must("ip", "-n", h.host, "link", "set", "eth0", "up")
		top.must("ip", "-n", h.host, "route", "add", "default", "via", h.gw)
		top.must("ip", "netns", "exec", h.nat, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	}
	top.SetNAT(mode)
	return top
}

// SetNAT (re)writes both routers' masquerade rules. Connections tracked
// before keep their mappings; new ones get the new mode.
func (top *Topology) SetNAT(mode NATMode) {
	top.t.Helper()
	masq := "masquerade"
	if mode == Symmetric {
		masq = "masquerade fully-random"
	}
	for _, nat := range []string{top.NAT1, top.NAT2} {
		// Only what the home started gets back in: no port is forwarded.
		// Unsolicited packets to the router itself are dropped, not
		// answered: dropped, they leave no connection tracked that
		// would take the port a simultaneous outbound packet (a hole
		// punch) needs, which would make the NAT pick another one.
		rules := fmt.Sprintf(`flush ruleset
table ip nat {
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "wan0" %s
	}
}
table ip filter {
	chain input {
		type filter hook input priority filter; policy accept;
		iifname "wan0" ct state new drop
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established,related accept
		iifname "lan0" oifname "wan0" accept
	}
}
`, masq)
		cmd := exec.Command("ip", "netns", "exec", nat, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			top.t.Fatalf("nft in %s: %v: %s", nat, err, out)
		}
	}
}

func (top *Topology) must(args ...string) {
	top.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput(); err != nil {
		top.t.Fatalf("%s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
}

// teardown deletes every namespace of this run (their links go with
// them); it runs also when the test failed half-way.
func (top *Topology) teardown() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		name := strings.Fields(line + " ")
		if len(name) > 0 && strings.HasPrefix(name[0], top.prefix) {
			if out, err := exec.Command("ip", "netns", "delete", name[0]).CombinedOutput(); err != nil {
				top.t.Logf("delete netns %s: %v: %s", name[0], err, out)
			}
		}
	}
}

// BlockBetweenHomes cuts (on) or restores (off) the direct path between
// the two home routers on the internet bridge; their paths to P and Q stay.
// While it is cut, hole punching between H1 and H2 fails and their
// traffic can only go through the relay.
func (top *Topology) BlockBetweenHomes(on bool) {
	top.t.Helper()
	if !on {
		top.must("ip", "netns", "exec", top.Inet, "nft", "delete", "table", "bridge", "homes")
		return
	}
	// port2 is NAT1's end on the bridge, port3 NAT2's (Build).
	rules := `table bridge homes {
	chain forward {
		type filter hook forward priority 0; policy accept;
		iifname "port2" oifname "port3" drop
		iifname "port3" oifname "port2" drop
	}
}
`
	cmd := exec.Command("ip", "netns", "exec", top.Inet, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		top.t.Fatalf("nft in %s: %v: %s", top.Inet, err, out)
	}
}

// AddClients adds n namespaces (n ≤ 50) on the internet bridge, each with
// one address (198.51.100.100 and up), for lightweight peers: libp2p dials
// from an interface's primary address, so peers that must show the relay
// different addresses need namespaces of their own. It returns the
// namespaces and their addresses.
func (top *Topology) AddClients(n int) (nss, addrs []string) {
	top.t.Helper()
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("%scl%d", top.prefix, i)
		a := fmt.Sprintf("198.51.100.%d", 100+i)
		port := fmt.Sprintf("portcl%d", i)
		top.must("ip", "netns", "add", ns)
		top.must("ip", "-n", ns, "link", "set", "lo", "up")
		top.must("ip", "link", "add", "name", port, "netns", top.Inet, "type", "veth", "peer", "name", "wan0", "netns", ns)
		top.must("ip", "-n", top.Inet, "link", "set", port, "master", "br0", "up")
		top.must("ip", "-n", ns, "addr", "add", a+"/24", "dev", "wan0")
		top.must("ip", "-n", ns, "link", "set", "wan0", "up")
		nss, addrs = append(nss, ns), append(addrs, a)
	}
	return nss, addrs
}

// Client returns an HTTP client whose connections are made inside the
// namespace ns (to reach a node's portal on 127.0.0.1 there).
func Client(ns string, timeout time.Duration) *http.Client {
	tr := &http.Transport{DialContext: DialIn(ns), DisableKeepAlives: true}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// DialIn returns a dial function whose sockets are created inside the
// network namespace ns: it switches one locked OS thread into ns, creates
// the socket and switches back.
func DialIn(ns string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		target, err := os.Open("/run/netns/" + ns)
		if err != nil {
			return nil, fmt.Errorf("netns %s: %w", ns, err)
		}
		defer target.Close()
		type result struct {
			c   net.Conn
			err error
		}
		ch := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
			if err != nil {
				runtime.UnlockOSThread()
				ch <- result{err: err}
				return
			}
			defer orig.Close()
			if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
				runtime.UnlockOSThread()
				ch <- result{err: fmt.Errorf("setns %s: %w", ns, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			} // else the thread stays locked and exits with this goroutine
			ch <- result{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// Eventually polls cond every interval until it holds or timeout passes,
// then fails with what cond said last.
func Eventually(t testing.TB, timeout, interval time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last: %s", what, timeout, last)
		}
		time.Sleep(interval)
	}
}
