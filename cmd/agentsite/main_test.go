package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// startNode runs a whole node the way the binary does, on SQLite in dir,
// with more flags if given.
func startNode(t *testing.T, dir string, flags ...string) *Main {
	t.Helper()
	return startNodeLogging(t, dir, io.Discard, flags...)
}

// startNodeLogging is startNode with the node's log written to logw.
func startNodeLogging(t *testing.T, dir string, logw io.Writer, flags ...string) *Main {
	t.Helper()
	m := NewMain()
	m.LogOutput = logw
	err := m.ParseFlags(append([]string{
		"--data-dir", dir,
		"--http-addr", "127.0.0.1:0",
		"--p2p-listen", "/ip4/127.0.0.1/tcp/0",
	}, flags...), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Run(t.Context()); err != nil {
		t.Fatalf("run node: %v", err)
	}
	return m
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

type nodeInfo struct {
	PeerID       string   `json:"peer_id"`
	Addrs        []string `json:"addrs"`
	AgentsHosted int      `json:"agents_hosted"`
}

type agentList struct {
	Agents []struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Status string `json:"status"`
		Local  bool   `json:"local"`
	} `json:"agents"`
}

func TestServeFirstStartAndRestart(t *testing.T) {
	dir := t.TempDir()
	m := startNode(t, dir)

	st, err := os.Stat(filepath.Join(dir, keyFile))
	if err != nil {
		t.Fatalf("node key not created: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("node key mode = %v, want 0600", st.Mode().Perm())
	}
	var first nodeInfo
	getJSON(t, m.HTTPURL()+"/api/v1/node", &first)
	if first.AgentsHosted != 2 || len(first.Addrs) == 0 {
		t.Fatalf("node = %+v, want 2 demo agents and addrs", first)
	}
	var agents agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents", &agents)
	names, ids := []string{}, []string{}
	for _, a := range agents.Agents {
		if !a.Local || a.Status != "online" {
			t.Errorf("demo agent %s: local=%v status=%s", a.Name, a.Local, a.Status)
		}
		names = append(names, a.Name)
		ids = append(ids, a.ID)
	}
	sort.Strings(names)
	sort.Strings(ids)
	if strings.Join(names, ",") != "calculator,echo" {
		t.Fatalf("demo agents = %v", names)
	}
	resp, err := http.Get(m.HTTPURL() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("Calculator")) {
		t.Errorf("home page: %d, mentions Calculator: %v", resp.StatusCode, bytes.Contains(body, []byte("Calculator")))
	}
	if err := m.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// Same data dir: same identity, same agent ids, no duplicates.
	m2 := startNode(t, dir)
	defer m2.Close()
	var second nodeInfo
	getJSON(t, m2.HTTPURL()+"/api/v1/node", &second)
	if second.PeerID != first.PeerID || second.AgentsHosted != 2 {
		t.Fatalf("after restart node = %+v, want peer %s with 2 agents", second, first.PeerID)
	}
	var again agentList
	getJSON(t, m2.HTTPURL()+"/api/v1/agents", &again)
	ids2 := []string{}
	for _, a := range again.Agents {
		ids2 = append(ids2, a.ID)
	}
	sort.Strings(ids2)
	if strings.Join(ids2, ",") != strings.Join(ids, ",") {
		t.Errorf("agent ids changed across restart: %v → %v", ids, ids2)
	}
}

func TestRunCommands(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	if err := run(t.Context(), []string{"keygen", "--data-dir", dir}, func(string) string { return "" }, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "12D3Koo") || !strings.Contains(out.String(), "created") {
		t.Errorf("keygen printed %q", out.String())
	}
	out.Reset()
	_ = run(t.Context(), []string{"keygen", "--data-dir", dir}, func(string) string { return "" }, &out, &errb)
	if !strings.Contains(out.String(), "existing") {
		t.Errorf("second keygen printed %q", out.String())
	}
	out.Reset()
	if err := run(t.Context(), []string{"version"}, nil, &out, &errb); err != nil || !strings.HasPrefix(out.String(), "agentsite ") {
		t.Errorf("version: %q, %v", out.String(), err)
	}
	if err := run(t.Context(), []string{"fly"}, nil, &out, &errb); err == nil {
		t.Error("unknown command accepted")
	}
}
