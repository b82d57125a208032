package nattest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/cmd/internal/procs"
	"github.com/agentsite/agentsite/handlers/apiwire"
)

// OperatorToken is the operator token every test node accepts.
const OperatorToken = "nattest-operator-token-0123456789"

// HTTPAddr is where a node's portal listens, inside its namespace.
const HTTPAddr = "127.0.0.1:8080"

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary builds cmd/agentsite once per test process and returns its path.
// It is a test build (-tags agentsite_testnet): only that honours
// --test-public-cidr, which the nodes need to count the "internet"
// (InternetCIDR, a documentation prefix) as public.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nattest-bin-")
		if err != nil {
			buildErr = err
			return
		}
		buildPath = filepath.Join(dir, "agentsite")
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-tags", "agentsite_testnet", "-o", buildPath,
			"github.com/agentsite/agentsite/cmd/agentsite")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build agentsite: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildPath
}

// NodeSpec is one agentsite node in a namespace.
type NodeSpec struct {
	Name      string // P, Q, H1, H2: names its log
	Netns     string
	DataDir   string   // kept across restarts: the same key and agents
	P2PPort   int      // TCP and QUIC
	Bootstrap []string // full multiaddrs
	Extra     []string // more flags
	// Owner is the test the node belongs to, which stops it at its end
	// (nil: the t given to Start). A subtest that restarts a node shared
	// by later subtests sets it to the parent test.
	Owner testing.TB
}

// Node is a running agentsite process inside a namespace.
type Node struct {
	Spec    NodeSpec
	LogPath string
	proc    *procs.Process
	client  *http.Client
	t       testing.TB
}

// Start runs the node and waits (≤ 60 s) until its /readyz answers; t.Cleanup
// stops it.
func Start(t testing.TB, bin string, s NodeSpec) *Node {
	t.Helper()
	args := []string{"netns", "exec", s.Netns, bin, "serve",
		"--data-dir", s.DataDir,
		"--http-addr", HTTPAddr,
		"--p2p-listen", fmt.Sprintf("/ip4/0.0.0.0/tcp/%d", s.P2PPort),
		"--p2p-listen", fmt.Sprintf("/ip4/0.0.0.0/udp/%d/quic-v1", s.P2PPort),
		"--test-public-cidr", InternetCIDR,
		"--secure-cookies=false",
		"--heartbeat-interval", "1s",
		"--chat-rate-limit", "100000",
		"--probe-interval", "1h",
		"--log-level", "info",
	}
	for _, b := range s.Bootstrap {
		args = append(args, "--bootstrap", b)
	}
	args = append(args, s.Extra...)
	if err := os.MkdirAll(filepath.Dir(s.DataDir), 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(filepath.Dir(s.DataDir), s.Name+".log")
	// Each start appends its log to the one before, so a restart keeps
	// the history.
	n := &Node{Spec: s, LogPath: logPath, client: Client(s.Netns, 30*time.Second), t: t}
	part := logPath + ".part"
	p, err := procs.Start(procs.Spec{
		Name: s.Name, Binary: "ip", Args: args, LogPath: part,
		DropEnv: []string{"AGENTSITE_"},
		Env:     []string{"AGENTSITE_OPERATOR_TOKEN=" + OperatorToken},
	})
	if err != nil {
		t.Fatal(err)
	}
	n.proc = p
	owner := s.Owner
	if owner == nil {
		owner = t
	}
	n.t = owner
	owner.Cleanup(func() { n.Stop() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := n.client.Get("http://" + HTTPAddr + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return n
			}
		}
		select {
		case <-p.Exited():
			t.Fatalf("%s exited before it was ready: %v\n%s", s.Name, p.Err(), n.Log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready in 60s (%v)\n%s", s.Name, err, n.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops the node (SIGTERM, then SIGKILL after 15 s) and keeps its log.
func (n *Node) Stop() {
	if n.proc == nil {
		return
	}
	if err := n.proc.Stop(15 * time.Second); err != nil {
		n.t.Logf("stop %s: %v", n.Spec.Name, err)
	}
	n.proc = nil
	part := n.LogPath + ".part"
	if b, err := os.ReadFile(part); err == nil {
		f, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			_, _ = f.Write(b)
			_ = f.Close()
		}
		_ = os.Remove(part)
	}
}

// Log is the node's log so far (every run of it).
func (n *Node) Log() string {
	old, _ := os.ReadFile(n.LogPath)
	cur, _ := os.ReadFile(n.LogPath + ".part")
	return string(old) + string(cur)
}

// LogLines returns the lines of the current run's log that contain s.
func (n *Node) LogLines(s string) []string {
	f, err := os.Open(n.LogPath + ".part")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// Do sends a request to the node's API; body is JSON-encoded when not nil.
func (n *Node) Do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+HTTPAddr+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+OperatorToken)
	resp, err := n.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, b, err
}

// Info is the node's GET /api/v1/node.
func (n *Node) Info() (apiwire.Node, error) {
	var v apiwire.Node
	code, b, err := n.Do("GET", "/api/v1/node", nil)
	if err != nil {
		return v, err
	}
	if code != http.StatusOK {
		return v, fmt.Errorf("GET /api/v1/node: %d %s", code, b)
	}
	return v, json.Unmarshal(b, &v)
}

// MustInfo is Info, failing t on error.
func (n *Node) MustInfo(t testing.TB) apiwire.Node {
	t.Helper()
	v, err := n.Info()
	if err != nil {
		t.Fatalf("%s: %v", n.Spec.Name, err)
	}
	return v
}

// Metric is the sum of the samples of a metric in the node's /metrics whose
// line contains every one of labels (e.g. `conn="relayed"`).
func (n *Node) Metric(name string, labels ...string) (float64, error) {
	code, b, err := n.Do("GET", "/metrics", nil)
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %d", code)
	}
	sum := 0.0
next:
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue next
			}
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
		}
	}
	return sum, nil
}

// Chat sends one turn to agentID through this node's message API and
// returns the reply.
func (n *Node) Chat(agentID, text string) (string, error) {
	code, b, err := n.Do("POST", "/api/v1/agents/"+agentID+"/messages", apiwire.MessageIn{Text: text})
	if err != nil {
		return "", err
	}
	if code != http.StatusOK {
		return "", fmt.Errorf("chat: %d %s", code, b)
	}
	var out apiwire.MessageOut
	if err := json.Unmarshal(b, &out); err != nil {
		return "", err
	}
	return out.Reply, nil
}

// Pid is the node process's id (ip netns exec becomes the node).
func (n *Node) Pid() int { return n.proc.Pid() }
