package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time                 { return c.t }
func (c *fakeClock) add(d time.Duration) *fakeClock { c.t = c.t.Add(d); return c }

// TestImportProgressOnATerminal: on a terminal the import rewrites one
// line with done of total, the percentage, the rate and the time left,
// at most every 200 ms, and ends it with a newline.
func TestImportProgressOnATerminal(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	p := newImportProgress(&out, true, 20000, clock.now)
	p.update(100, 100, 0, 0) // too soon: nothing
	if out.Len() != 0 {
		t.Fatalf("printed before the first 200 ms: %q", out.String())
	}
	clock.add(10 * time.Second)
	p.update(5000, 4990, 0, 10)
	want := "\r\033[K5000 of 20000 items (25%), 500/s, about 30s left (4990 created, 0 updated, 10 refused)"
	if out.String() != want {
		t.Fatalf("line = %q\nwant  %q", out.String(), want)
	}
	out.Reset()
	clock.add(100 * time.Millisecond)
	p.update(5050, 5040, 0, 10)
	if out.Len() != 0 {
		t.Errorf("printed again within 200 ms: %q", out.String())
	}
	clock.add(30 * time.Second)
	p.finish(20000, 19990, 0, 10)
	if got := out.String(); got != "\r\033[K20000 of 20000 items (100%), 499/s (19990 created, 0 updated, 10 refused)\n" {
		t.Errorf("last line = %q", got)
	}
}

// TestImportProgressInALog: elsewhere (a pipe, a log) it prints plain
// lines at most once a second and nothing at the end (the summary
// follows on stdout); without a total (standard input) the count and
// the rate.
func TestImportProgressInALog(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	p := newImportProgress(&out, false, 1000, clock.now)
	clock.add(500 * time.Millisecond)
	p.update(10, 10, 0, 0)
	clock.add(1500 * time.Millisecond)
	p.update(400, 390, 10, 0)
	p.finish(1000, 980, 20, 0)
	if got := out.String(); got != "400 of 1000 items (40%), 200/s, about 3s left (390 created, 10 updated, 0 refused)\n" {
		t.Errorf("log = %q", got)
	}

	out.Reset()
	p = newImportProgress(&out, false, 0, clock.now)
	clock.add(4 * time.Minute)
	p.update(12000, 12000, 0, 0)
	if got := out.String(); got != "12000 items, 50/s (12000 created, 0 updated, 0 refused)\n" {
		t.Errorf("without a total: %q", got)
	}
}

// TestCountJSONLines counts the items of a file as the JSON-lines reader
// takes them: not blank lines nor comments, a last line without a
// newline, and a line longer than the reader's buffer once.
func TestCountJSONLines(t *testing.T) {
	body := "{\"a\":1}\n\n   \n# a comment {\n  {\"b\":2}\r\n{\"c\":\"" + strings.Repeat("x", 200_000) + "\"}\n{\"d\":4}"
	path := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := countJSONLines(path); n != 4 {
		t.Errorf("countJSONLines = %d, want 4", n)
	}
	if n := countJSONLines(filepath.Join(t.TempDir(), "missing")); n != 0 {
		t.Errorf("a missing file counts %d", n)
	}
}

// TestRunningNodeRegistryBatches: a running node's registry writes bulk
// registrations (POST /api/v1/agents:batch, import --node) in the
// engine's transactions behind the read cache, a chunk at a time, as an
// offline import does; before, it had no Batcher and wrote item by item
// (40 items/s).
func TestRunningNodeRegistryBatches(t *testing.T) {
	m := startNode(t, t.TempDir(), "--demo-agents=false")
	defer m.Close()
	if _, ok := m.Server.Registry.Store.(store.Batcher); !ok {
		t.Error("the running node's registry store runs no transactions (store.Batcher)")
	}
	if _, ok := m.Server.Registry.Store.(store.AgentsGetter); !ok {
		t.Error("the running node's registry store reads no chunk at once (store.AgentsGetter)")
	}
}

// TestImportOneItem: one item is "1 item", in the summary, the progress
// line and the refusal, never "1 items".
func TestImportOneItem(t *testing.T) {
	var out bytes.Buffer
	s := &importSummary{created: 1, start: time.Now()}
	s.print(&out)
	if got := out.String(); !strings.HasPrefix(got, "1 item in ") {
		t.Errorf("summary = %q, want 1 item", got)
	}
	out.Reset()
	clock := &fakeClock{t: time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)}
	newImportProgress(&out, false, 1, clock.now).print(clock.add(time.Second).now(), 1, 1, 0, 0)
	if got := out.String(); !strings.HasPrefix(got, "1 of 1 item (100%)") {
		t.Errorf("progress = %q, want 1 of 1 item", got)
	}
	if got := (refusedError{refused: 1, total: 1}).Error(); !strings.HasPrefix(got, "1 of 1 item was refused") {
		t.Errorf("refusal = %q", got)
	}
}

// TestMissingFileNamedOnce: a file that cannot be opened is named once in
// the error ("open FILE: why"), not twice ("open FILE: open FILE: why").
func TestMissingFileNamedOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.jsonl")
	for name, args := range map[string][]string{
		"import": {"--data-dir", t.TempDir(), missing},
		"crawl":  {"--data-dir", t.TempDir(), "--crawl", missing},
	} {
		err := runImport(t.Context(), args, env(nil), strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || strings.Count(err.Error(), missing) != 1 {
			t.Errorf("%s: %v, want %s named once", name, err, missing)
		}
	}
	var c Config
	err := c.Parse([]string{"--data-dir", t.TempDir(), "--verify-ca", missing}, env(nil), io.Discard)
	if err == nil || strings.Count(err.Error(), missing) != 1 {
		t.Errorf("--verify-ca: %v, want %s named once", err, missing)
	}
}
