package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// importLines is a JSON-lines file: n echo agents, then one item the
// registration rules refuse and one that is not JSON.
func importLines(t *testing.T, n int, desc string) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"name":"bulk-%d","display_name":"Bulk %d","description":%q,"tags":["bulk"],"backend":{"kind":"builtin","builtin":"echo"}}`+"\n", i, i, desc)
	}
	b.WriteString(`{"name":"Bad Name!","display_name":"x","description":"y","backend":{"kind":"builtin","builtin":"echo"}}` + "\n")
	b.WriteString("{not json\n")
	path := filepath.Join(t.TempDir(), "agents.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantRefused fails t unless err is an import's "refused of total" outcome.
func wantRefused(t *testing.T, err error, refused, total int) {
	t.Helper()
	var re refusedError
	if !errors.As(err, &re) || re.refused != refused || re.total != total {
		t.Fatalf("import: %v, want %d of %d items refused", err, refused, total)
	}
}

func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errw bytes.Buffer
	err = run(t.Context(), args, func(string) string { return "" }, &out, &errw)
	return out.String(), errw.String(), err
}

// TestImportOffline imports into a stopped node's data dir (SQLite) and
// database (Postgres); the node then hosts the agents, signed by its key,
// and a second import of the same file updates them.
func TestImportOffline(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			var dbFlags []string
			if engine == "postgres" {
				dbFlags = []string{"--database-url", pgtest.NewDatabase(t)}
			}
			file := importLines(t, 30, "First import.")
			out, _, err := runCmd(t, append(append([]string{"import", "--data-dir", dir}, dbFlags...), file)...)
			wantRefused(t, err, 2, 32)
			if !strings.HasPrefix(out, "32 items") || !strings.Contains(out, "30 created, 0 updated, 2 refused") {
				t.Fatalf("summary:\n%s", out)
			}
			if !strings.Contains(out, "refused item 31 (bad name!): name:") || !strings.Contains(out, "refused item 32 (-): line 32: not a registration body") {
				t.Errorf("reasons:\n%s", out)
			}
			out, _, err = runCmd(t, append(append([]string{"import", "--data-dir", dir}, dbFlags...), importLines(t, 30, "Second import."))...)
			wantRefused(t, err, 2, 32)
			if !strings.Contains(out, "0 created, 30 updated, 2 refused") {
				t.Fatalf("second import: %v\n%s", err, out)
			}

			m := startNode(t, dir, append(dbFlags, "--demo-agents=false")...)
			defer m.Close()
			var list agentList
			getJSON(t, m.HTTPURL()+"/api/v1/agents?tag=bulk&limit=100", &list)
			if len(list.Agents) != 30 {
				t.Fatalf("%d bulk agents listed, want 30", len(list.Agents))
			}
			for _, a := range list.Agents {
				if !a.Local || a.Status != "online" {
					t.Errorf("agent %s: local %v, status %s", a.Name, a.Local, a.Status)
				}
			}
			var one struct {
				Description string `json:"description"`
				Publisher   string `json:"publisher"`
			}
			getJSON(t, m.HTTPURL()+"/api/v1/agents/"+list.Agents[0].ID, &one)
			if one.Description != "Second import." || one.Publisher != m.Node.PeerID() {
				t.Errorf("agent = %+v, want the second import's, published by %s", one, m.Node.PeerID())
			}
		})
	}
}

// TestImportThroughNode imports through a running node's batch API with
// the operator token, and the MCP Registry sample offline.
func TestImportThroughNode(t *testing.T) {
	const token = "import-operator-token-123"
	m := startNode(t, t.TempDir(), "--operator-token", token, "--demo-agents=false")
	defer m.Close()
	out, _, err := runCmd(t, "import", "--node", m.HTTPURL(), "--operator-token", token, "--batch-size", "7", importLines(t, 20, "Via the API."))
	wantRefused(t, err, 2, 22)
	if !strings.Contains(out, "20 created, 0 updated, 2 refused") {
		t.Fatalf("summary:\n%s", out)
	}
	if !strings.Contains(out, "refused item 21 (bad name!): ") {
		t.Errorf("reasons:\n%s", out)
	}
	var list agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents?tag=bulk&limit=100", &list)
	if len(list.Agents) != 20 {
		t.Fatalf("%d agents listed, want 20", len(list.Agents))
	}
	// A wrong token is refused as a whole, with the node's reason.
	_, _, err = runCmd(t, "import", "--node", m.HTTPURL(), "--operator-token", "wrong-token-wrong-token", importLines(t, 1, "x"))
	if err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}

	dir := t.TempDir()
	out, _, err = runCmd(t, "import", "--format", "mcp-registry", "--data-dir", dir, "../../testdata/mcpregistry/servers.json")
	wantRefused(t, err, 1, 3)
	if !strings.Contains(out, "3 items") || !strings.Contains(out, "2 created, 0 updated, 1 refused") ||
		!strings.Contains(out, "io.github.user/weather): it has no remote") {
		t.Fatalf("mcp-registry import: %v\n%s", err, out)
	}
	if _, _, err := runCmd(t, "import", "--format", "yaml", "--data-dir", dir, "x"); err == nil {
		t.Error("an unknown format was accepted")
	}
}

// TestImportLongLine: a line over 256 KiB in the middle of the file is
// refused with its line number, every other line is imported, and the
// command fails, saying how many were refused (before, the import
// stopped at that line, skipped the rest and exited 0).
func TestImportLongLine(t *testing.T) {
	var b strings.Builder
	line := func(i int, desc string) {
		fmt.Fprintf(&b, `{"name":"long-%d","display_name":"Long %d","description":%q,"tags":["bulk"],"backend":{"kind":"builtin","builtin":"echo"}}`+"\n", i, i, desc)
	}
	for i := range 3 {
		line(i, "Short.")
	}
	b.WriteString("# a comment\n")
	line(3, strings.Repeat("x", bulk.MaxItemBytes)) // line 5
	for i := 4; i < 10; i++ {
		line(i, "Short.")
	}
	path := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, _, err := runCmd(t, "import", "--data-dir", dir, path)
	wantRefused(t, err, 1, 10)
	if !strings.Contains(out, "9 created, 0 updated, 1 refused") ||
		!strings.Contains(out, "refused item 4 (-): line 5: the line is longer than 256 KiB") {
		t.Fatalf("summary:\n%s", out)
	}
	m := startNode(t, dir, "--demo-agents=false")
	defer m.Close()
	var list agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents?tag=bulk&limit=100", &list)
	if len(list.Agents) != 9 {
		t.Fatalf("%d agents listed, want the 9 short lines'", len(list.Agents))
	}
}
