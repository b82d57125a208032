package bulk_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/agent/registry"
)

func collect(t *testing.T, format, text string, opts bulk.Options) []registry.BatchItem {
	t.Helper()
	opts.Format = format
	seq, err := bulk.Items(t.Context(), strings.NewReader(text), opts)
	if err != nil {
		t.Fatal(err)
	}
	var out []registry.BatchItem
	for it := range seq {
		out = append(out, it)
	}
	return out
}

func TestJSONLines(t *testing.T) {
	text := `{"name":"a-bot","display_name":"A","description":"d","backend":{"kind":"builtin","builtin":"echo"}}

# a comment
{"name":"b-bot","nmae":"typo"}
not json
`
	items := collect(t, "jsonl", text, bulk.Options{})
	if len(items) != 3 {
		t.Fatalf("%d items, want 3: %+v", len(items), items)
	}
	if items[0].Err != nil || items[0].Input.Name != "a-bot" || items[0].Input.Backend.Builtin != "echo" {
		t.Errorf("item 0 = %+v", items[0])
	}
	if items[1].Err == nil || !strings.Contains(items[1].Err.Error(), "nmae") {
		t.Errorf("unknown field: %v", items[1].Err)
	}
	if items[2].Err == nil || !strings.HasPrefix(items[2].Err.Error(), "line 5:") || items[2].Index != 2 {
		t.Errorf("bad line: %+v", items[2])
	}
}

// TestJSONLinesLongLine: a line over MaxItemBytes is refused alone, with
// its line number, and the lines after it are read (before, the reader
// stopped at such a line and the rest of the file was never imported).
func TestJSONLinesLongLine(t *testing.T) {
	// padded is a valid registration of exactly n bytes (JSON whitespace
	// between its members makes up the length).
	padded := func(name string, n int) string {
		head, tail := `{"name":"`+name+`",`, `"backend":{"kind":"builtin","builtin":"echo"}}`
		return head + strings.Repeat(" ", n-len(head)-len(tail)) + tail
	}
	text := padded("a-bot", 100) + "\n" +
		padded("b-bot", bulk.MaxItemBytes+1) + "\n" +
		"\n" +
		padded("c-bot", bulk.MaxItemBytes) + "\r\n" +
		strings.Repeat("x", 3*bulk.MaxItemBytes) + "\n" +
		padded("d-bot", 200) // the last line, without a newline
	for _, format := range []string{"jsonl", "a2a-cards"} {
		items := collect(t, format, text, bulk.Options{})
		if len(items) != 5 {
			t.Fatalf("%s: %d items, want 5: %+v", format, len(items), items)
		}
		for i, want := range []int{0, 2, 0, 5, 0} { // the line of each refused item
			it := items[i]
			if it.Index != i {
				t.Errorf("%s: item %d has index %d", format, i, it.Index)
			}
			if want == 0 {
				continue
			}
			if !errors.Is(it.Err, bulk.ErrItemTooLong) || !strings.HasPrefix(it.Err.Error(), fmt.Sprintf("line %d: ", want)) {
				t.Errorf("%s: item %d: %v, want line %d refused as too long", format, i, it.Err, want)
			}
		}
		if format != "jsonl" {
			continue
		}
		for i, name := range map[int]string{0: "a-bot", 2: "c-bot", 4: "d-bot"} {
			if items[i].Err != nil || items[i].Input.Name != name {
				t.Errorf("item %d = %q, %v; want %s read", i, items[i].Input.Name, items[i].Err, name)
			}
		}
	}
}

func TestMCPRegistrySample(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/mcpregistry/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	items := collect(t, "mcp-registry", string(raw), bulk.Options{})
	if len(items) != 3 {
		t.Fatalf("%d items, want 3", len(items))
	}
	in := items[0].Input
	if items[0].Err != nil || in.Name != "io-github-user-remote-weather" || in.DisplayName != "Remote Weather" ||
		in.Version != "2.1.0" || in.Backend.Kind != agent.BackendMCP || in.Backend.URL != "https://api.example.com/mcp" ||
		in.Backend.Tool != "remote-weather" {
		t.Errorf("with remote: %+v, %v", in, items[0].Err)
	}
	if items[1].Err == nil || !strings.Contains(items[1].Err.Error(), "no remote") {
		t.Errorf("without remote: %v", items[1].Err)
	}
	if in := items[2].Input; items[2].Err != nil || in.Backend.URL != "https://mcp-fs.example.com/sse" || in.Name != "com-example-demo-server" {
		t.Errorf("sse remote: %+v, %v", in, items[2].Err)
	}
	// Every item is a valid registration.
	for _, it := range []registry.BatchItem{items[0], items[2]} {
		if err := it.Input.Backend.Validate(); err != nil {
			t.Errorf("%s: %v", it.Input.Name, err)
		}
	}
	// A bare array of server.json documents, a tool given, a broken list.
	items = collect(t, "mcp-registry", `[{"name":"x.y/zz","description":"d","version":"v1.2","remotes":[{"type":"streamable-http","url":"https://h/mcp"}]}]`, bulk.Options{MCPTool: "ask"})
	if len(items) != 1 || items[0].Input.Backend.Tool != "ask" || items[0].Input.Version != "" {
		t.Errorf("array: %+v", items)
	}
	items = collect(t, "mcp-registry", `{"servers": [{"name": "a/b", `, bulk.Options{})
	if len(items) != 1 || items[0].Err == nil {
		t.Errorf("broken: %+v", items)
	}
	items = collect(t, "mcp-registry", `{"metadata": {}}`, bulk.Options{})
	if len(items) != 1 || items[0].Err == nil || !strings.Contains(items[0].Err.Error(), "no \"servers\"") {
		t.Errorf("no servers: %+v", items)
	}
}

func TestA2ACards(t *testing.T) {
	fetched := ""
	fetch := func(_ context.Context, u string) (bulk.Card, error) {
		if strings.Contains(u, "down") {
			return bulk.Card{}, errors.New("connection refused")
		}
		fetched = u
		return bulk.Card{Name: "Travel Planner", Description: "Plans trips.", Version: "0.3.0",
			Skills: []agent.Skill{{ID: "Plan Trip", Name: "Plan a trip"}}}, nil
	}
	text := `https://travel.example.org/.well-known/agent-card.json
"https://down.example.org/.well-known/agent-card.json"
{"name":"Recipe Agent","description":"Finds recipes.","url":"https://recipes.example.org/a2a/v1","version":"1.0.0","skills":[{"id":"find","name":"Find"}]}
{"name":"No URL"}
`
	items := collect(t, "a2a-cards", text, bulk.Options{FetchCard: fetch})
	if len(items) != 4 {
		t.Fatalf("%d items", len(items))
	}
	in := items[0].Input
	if items[0].Err != nil || in.Name != "travel-planner" || in.Backend.Kind != agent.BackendA2A ||
		in.Backend.URL != fetched || in.Skills[0].ID != "plan-trip" || in.Version != "0.3.0" {
		t.Errorf("card URL: %+v, %v", in, items[0].Err)
	}
	if items[1].Err == nil || !strings.Contains(items[1].Err.Error(), "connection refused") {
		t.Errorf("down: %v", items[1].Err)
	}
	if in := items[2].Input; items[2].Err != nil || in.Backend.URL != "https://recipes.example.org/.well-known/agent-card.json" || in.Name != "recipe-agent" {
		t.Errorf("card JSON: %+v, %v", in, items[2].Err)
	}
	if items[3].Err == nil {
		t.Error("a card without url was accepted")
	}
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"io.github.User/Weather_Server": "io-github-user-weather-server",
		"a":                             "a-x",
		"--x--":                         "x-x",
	} {
		if got := bulk.Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
	long := bulk.Slug(strings.Repeat("abcdefghij", 10) + "/x")
	if len(long) > agent.MaxNameLen || !agent.IsSlug(long, agent.MinNameLen, agent.MaxNameLen) {
		t.Errorf("long slug %q", long)
	}
}
