package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `agentsite import --format ai-catalog URL` reads another node's AI
// Catalog over HTTP (through the guarded client): its A2A cards and MCP
// server cards become agents of this node, its registry entry is refused
// with the reason.
func TestImportAICatalogFromANode(t *testing.T) {
	a := startClusterNode(t, nodeOpts{})
	a.register("weather-bot", "weather")
	dir := t.TempDir()
	stdout, stderr, err := runCmd(t, "import", "--format", "ai-catalog", "--data-dir", dir, "--allow-endpoint", strings.TrimPrefix(a.m.HTTPURL(), "http://"),
		a.m.HTTPURL()+"/.well-known/ai-catalog.json")
	// weather-bot's A2A card (an a2a agent) and its MCP server card (an
	// mcp agent named after the card), and the registry, refused.
	wantRefused(t, err, 1, 3)
	if !strings.Contains(stdout, "2 created, 0 updated, 1 refused") || !strings.Contains(stdout, "application/ai-registry+json") {
		t.Errorf("summary:\n%s\nprogress:\n%s", stdout, stderr)
	}
}

// --crawl reads at most --crawl-max domains, each checked.
func TestCrawlDomainsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "domains.txt")
	if err := os.WriteFile(path, []byte("# publishers\nexample.org\nExample.org.\n\nagents.example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := readDomains(path, 2)
	if err != nil || len(ds) != 2 || ds[0] != "example.org" || ds[1] != "agents.example.com" {
		t.Errorf("domains = %v, %v", ds, err)
	}
	if _, err := readDomains(path, 1); err == nil || !strings.Contains(err.Error(), "--crawl-max") {
		t.Errorf("over --crawl-max: %v", err)
	}
	if err := os.WriteFile(path, []byte("not a domain\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readDomains(path, 10); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad line: %v", err)
	}
	if _, _, err := runCmd(t, "import", "--crawl", path, "x.json"); err == nil || !strings.Contains(err.Error(), "no FILE") {
		t.Errorf("--crawl with a FILE: %v", err)
	}
}
