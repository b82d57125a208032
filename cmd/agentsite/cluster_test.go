package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// Fast network timings for tests; the defaults stay those of docs/architecture.md.
const (
	testHeartbeat = 200 * time.Millisecond
	testTTL       = 6 * time.Second
	testOperator  = "cluster-test-operator-token"
)

// clusterNode is one node of a test planet.
type clusterNode struct {
	t   testing.TB
	m   *Main
	dir string
	url string // set for Postgres nodes
}

// nodeOpts tweaks a test node.
type nodeOpts struct {
	bootstrap []string
	dir       string // reuse a data dir (restart)
	postgres  bool
	demo      bool
	extra     []string         // more flags
	ttl       time.Duration    // record TTL; 0: testTTL
	heartbeat time.Duration    // heartbeat interval; 0: testHeartbeat
	health    p2p.HealthSource // Main.HealthSource; nil: the node's own
	link      time.Duration    // Main.LinkDelay (-tags agentsite_testnet)
	verifyTLS int              // Main.VerifyHTTPSPort: HTTPS domain proofs' port (verify_test.go)
	reach     []string         // Main.OutboundTestAllow: loopback URLs every outbound purpose may reach (push receivers)
	label     string           // the pprof label of the node's goroutines (cpusplit_test.go); "": none
}

// startClusterNode starts a whole node on 127.0.0.1 the way the binary does.
func startClusterNode(t testing.TB, o nodeOpts) *clusterNode {
	t.Helper()
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	if o.ttl == 0 {
		o.ttl = testTTL
	}
	if o.heartbeat == 0 {
		o.heartbeat = testHeartbeat
	}
	args := []string{
		"--data-dir", o.dir,
		"--http-addr", "127.0.0.1:0",
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
		"--heartbeat-interval", o.heartbeat.String(),
		"--record-ttl", o.ttl.String(),
		"--operator-token", testOperator,
		fmt.Sprintf("--demo-agents=%v", o.demo),
		"--log-level", "error",
		"--node-name", "", // nodes shown by peer id, as the tests' steps expect
	}
	args = append(args, o.extra...)
	for _, b := range o.bootstrap {
		args = append(args, "--bootstrap", b)
	}
	n := &clusterNode{t: t, dir: o.dir}
	if o.postgres {
		n.url = pgtest.NewDatabase(t)
		args = append(args, "--database-url", n.url)
	}
	n.m = NewMain()
	n.m.LogOutput = io.Discard
	n.m.HealthSource = o.health
	n.m.LinkDelay = o.link
	n.m.VerifyHTTPSPort = o.verifyTLS
	if o.verifyTLS != 0 { // proofs are never fetched from loopback but in tests
		n.m.OutboundTestAllow = runtime.AllowList{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: uint16(o.verifyTLS)}}
	}
	for _, raw := range o.reach { // nor are push notifications sent there
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		e, err := runtime.ParseAllowEntry(u.Host)
		if err != nil {
			t.Fatal(err)
		}
		n.m.OutboundTestAllow = append(n.m.OutboundTestAllow, e...)
	}
	if err := n.m.ParseFlags(args, func(string) string { return "" }, io.Discard); err != nil {
		t.Fatal(err)
	}
	var err error
	runLabelled(o.label, func() { err = n.m.Run(t.Context()) })
	if err != nil {
		t.Fatalf("start node: %v", err)
	}
	t.Cleanup(func() { n.stop() })
	return n
}

func (n *clusterNode) stop() {
	if n.m != nil {
		if err := n.m.Close(); err != nil {
			n.t.Errorf("close node: %v", err)
		}
		n.m = nil
	}
}

func (n *clusterNode) addr() string { return n.m.Node.Addrs()[0] }

func (n *clusterNode) peerID() string { return n.m.Node.PeerID() }

// api sends a JSON request to the node's API with the operator token.
func (n *clusterNode) api(method, path string, body any) (int, []byte) {
	n.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(n.t.Context(), method, n.m.HTTPURL()+path, rd)
	req.Header.Set("Authorization", "Bearer "+testOperator)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		n.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

type apiAgent struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Seq         uint64 `json:"seq"`
	Status      string `json:"status"`
	Local       bool   `json:"local"`
	HostPeerID  string `json:"host_peer_id"`
	Health      struct {
		State string `json:"state"`
	} `json:"health"`
}

// agent returns the node's view of one agent, with the HTTP status.
func (n *clusterNode) agent(id string) (int, apiAgent) {
	code, body := n.api("GET", "/api/v1/agents/"+id, nil)
	var a apiAgent
	_ = json.Unmarshal(body, &a)
	return code, a
}

// agentIDs lists every agent id the node's API shows with the given status filter.
func (n *clusterNode) agentIDs(status string) map[string]apiAgent {
	out := map[string]apiAgent{}
	cursor := ""
	for {
		code, body := n.api("GET", "/api/v1/agents?limit=100&status="+status+"&cursor="+cursor, nil)
		if code != http.StatusOK {
			n.t.Fatalf("list agents: %d %s", code, body)
		}
		var page struct {
			Agents     []apiAgent `json:"agents"`
			NextCursor string     `json:"next_cursor"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			n.t.Fatal(err)
		}
		for _, a := range page.Agents {
			out[a.ID] = a
		}
		if page.NextCursor == "" {
			return out
		}
		cursor = page.NextCursor
	}
}

// register creates an agent on n through the API and returns it.
func (n *clusterNode) register(name string, tags ...string) apiAgent {
	n.t.Helper()
	return n.registerBackend(name, map[string]any{"kind": "builtin", "builtin": "echo"}, tags...)
}

// registerBackend creates an agent with backend on n through the API.
func (n *clusterNode) registerBackend(name string, backend map[string]any, tags ...string) apiAgent {
	n.t.Helper()
	if len(tags) == 0 {
		tags = []string{"test"}
	}
	code, body := n.api("POST", "/api/v1/agents", map[string]any{
		"name": name, "display_name": strings.ToUpper(name[:1]) + name[1:], "description": "Agent " + name + ".",
		"tags": tags, "backend": backend,
	})
	if code != http.StatusCreated {
		n.t.Fatalf("register %s on %s: %d %s", name, n.peerID(), code, body)
	}
	var a apiAgent
	_ = json.Unmarshal(body, &a)
	return a
}

func TestThreeNodesRegisterUpdateDelete(t *testing.T) {
	a := startClusterNode(t, nodeOpts{postgres: true})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}})
	c := startClusterNode(t, nodeOpts{bootstrap: []string{b.addr()}})

	created := a.register("weather-bot", "weather")
	// Online once C has heard A's heartbeat too, which may come after the
	// listing (store.Sink.Put stores a listing of an unheard host stale).
	waitfor.Until(t, 15*time.Second, "C to learn the agent registered on A, online", func() bool {
		code, got := c.agent(created.ID)
		return code == http.StatusOK && got.Seq == created.Seq && got.Status == "online"
	})
	_, onC := c.agent(created.ID)
	if onC.Local || onC.HostPeerID != a.peerID() {
		t.Errorf("C's view = %+v", onC)
	}

	code, body := a.api("PUT", "/api/v1/agents/"+created.ID, map[string]any{
		"name": "weather-bot", "display_name": "Weather Bot v2", "tags": []string{"weather"},
		"backend": map[string]string{"kind": "builtin", "builtin": "echo"},
	})
	if code != http.StatusOK {
		t.Fatalf("update: %d %s", code, body)
	}
	waitfor.Until(t, 15*time.Second, "C to show the update", func() bool {
		_, got := c.agent(created.ID)
		return got.DisplayName == "Weather Bot v2"
	})

	if code, body := a.api("DELETE", "/api/v1/agents/"+created.ID, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", code, body)
	}
	waitfor.Until(t, 15*time.Second, "C to hide the deleted agent", func() bool {
		code, _ := c.agent(created.ID)
		_, listed := c.agentIDs("all")[created.ID]
		return code == http.StatusGone && !listed
	})
}
