package bulk_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
)

// An AI Catalog's A2A cards and MCP server cards become registrations,
// nested catalogs are read (a cycle once), placeholders and non-agent
// entries are refused with their reason.
func TestAICatalogImport(t *testing.T) {
	raw, err := os.ReadFile("../../testdata/ai-catalog/catalog.json")
	if err != nil {
		t.Fatal(err)
	}
	more, err := os.ReadFile("../../testdata/ai-catalog/more.json")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{
		"https://example.org/catalogs/more.json":    string(more),
		"https://example.org/mcp/files/server-card": `{"serverInfo": {"name": "files", "title": "Files", "version": "2.0.0"}, "description": "Files.", "transport": {"type": "streamable-http", "endpoint": "https://example.org/mcp/files"}}`,
	}
	var fetched []string
	opts := bulk.Options{
		FetchCard: func(_ context.Context, u string) (bulk.Card, error) {
			fetched = append(fetched, u)
			return bulk.Card{Name: "Assistant", Description: "General-purpose assistant.", Version: "1.0.0"}, nil
		},
		FetchDoc: func(_ context.Context, u string, max int64) ([]byte, error) {
			fetched = append(fetched, u)
			d, ok := docs[u]
			if !ok {
				return nil, errors.New("404")
			}
			return []byte(d), nil
		},
	}
	items := collect(t, bulk.FormatAICatalog, string(raw), opts)
	if len(items) != 5 {
		for _, it := range items {
			t.Logf("%+v %v", it.Input, it.Err)
		}
		t.Fatalf("%d items, want 5", len(items))
	}
	if in := items[0].Input; items[0].Err != nil || in.Backend.Kind != agent.BackendA2A || in.Name != "assistant" {
		t.Errorf("A2A card: %+v %v", in, items[0].Err)
	}
	if in := items[1].Input; items[1].Err != nil || in.Backend.Kind != agent.BackendMCP || in.Backend.URL != "https://mcp.example.org/weather" || in.Version != "1.4.0" {
		t.Errorf("server card inline: %+v %v", in, items[1].Err)
	}
	if err := items[2].Err; err == nil || !strings.Contains(err.Error(), "<YOUR_TOKEN>") {
		t.Errorf("placeholder: %v", err)
	}
	if in := items[3].Input; items[3].Err != nil || in.Backend.URL != "https://example.org/mcp/files" || in.DisplayName != "Files" {
		t.Errorf("nested server card by URL: %+v %v", in, items[3].Err)
	}
	if err := items[4].Err; err == nil || !strings.Contains(err.Error(), "application/ai-registry+json") {
		t.Errorf("registry entry: %v", err)
	}
	if n := strings.Count(strings.Join(fetched, " "), "more.json"); n != 1 {
		t.Errorf("the nested catalog was fetched %d times (a cycle must end)", n)
	}
	// Not a catalog at all.
	if items := collect(t, bulk.FormatAICatalog, `{"servers": []}`, opts); len(items) != 1 || items[0].Err == nil {
		t.Errorf("not a catalog: %+v", items)
	}
}
