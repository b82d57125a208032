package bulk_test

import (
	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
	"slices"
	"strings"
	"testing"
)

// Remote URLs with unfilled placeholders are refused with the placeholder
// named (the registry lists a server with a literal <YOUR_TOKEN> in its
// URL); a variable with a default is filled; an empty
// description stays empty.
func TestMCPRegistryPlaceholders(t *testing.T) {
	items := collect(t, "mcp-registry", `{"servers": [
		{"server": {"name": "io.github.a/token", "description": "d", "version": "1.0.0",
			"remotes": [{"type": "streamable-http", "url": "https://api.example.com/mcp?key=<YOUR_TOKEN>"}]}},
		{"server": {"name": "io.github.a/tenant", "description": "d", "version": "1.0.0",
			"remotes": [{"type": "streamable-http", "url": "https://{tenant}.example.com/mcp"}]}},
		{"server": {"name": "io.github.a/encoded", "description": "d", "version": "1.0.0",
			"remotes": [{"type": "streamable-http", "url": "https://api.example.com/mcp/%3CKEY%3E"}]}},
		{"server": {"name": "io.github.a/filled", "description": "", "version": "1.0.0",
			"remotes": [{"type": "streamable-http", "url": "https://{tenant}.example.com/mcp", "variables": {"tenant": {"default": "eu"}}}]}},
		{"server": {"name": "io.github.a/second", "description": "d", "version": "1.0.0",
			"remotes": [{"type": "streamable-http", "url": "https://x.example.com/<ID>/mcp"}, {"type": "sse", "url": "https://x.example.com/sse"}]}}
	]}`, bulk.Options{})
	if len(items) != 5 {
		t.Fatalf("%d items", len(items))
	}
	for i, ph := range []string{"<YOUR_TOKEN>", "{tenant}", "%3CKEY%3E"} {
		if err := items[i].Err; err == nil || !strings.Contains(err.Error(), "unfilled placeholder "+ph) {
			t.Errorf("item %d: %v, want a refusal naming %s", i, err, ph)
		}
	}
	if o := items[3].Input.Origin; o == nil || o.Registry != agent.OriginMCPRegistry || o.Name != "io.github.a/filled" || o.Version != "1.0.0" {
		t.Errorf("origin = %+v, want the upstream name and version", o)
	}
	if in := items[3].Input; items[3].Err != nil || in.Backend.URL != "https://eu.example.com/mcp" || in.Description != "" {
		t.Errorf("filled: %+v %v (the description must stay empty)", in, items[3].Err)
	}
	// A remote without placeholders is taken after one with.
	if in := items[4].Input; items[4].Err != nil || in.Backend.URL != "https://x.example.com/sse" {
		t.Errorf("second remote: %+v %v", in, items[4].Err)
	}
}

// A server with packages and no remote becomes a catalogue listing with
// its install line (before, 464 of the registry's 471 seed servers were
// refused, so nobody searching the hub learnt they exist).
func TestMCPRegistryPackageOnly(t *testing.T) {
	items := collect(t, "mcp-registry", `{"servers": [
		{"server": {"name": "io.github.a/files", "description": "Files over stdio.", "version": "0.3.1",
			"packages": [{"registryType": "npm", "identifier": "@a/files-mcp", "version": "0.3.1", "transport": {"type": "stdio"}}]}},
		{"server": {"name": "io.github.a/py", "description": "d", "version": "1.0.0",
			"packages": [{"registryType": "pypi", "identifier": "a-py-mcp", "version": "1.0.0"}]}},
		{"server": {"name": "io.github.a/evil", "description": "d", "version": "1.0.0",
			"packages": [{"registryType": "npm", "identifier": "x; rm -rf /", "version": "1"}]}}
	]}`, bulk.Options{})
	if len(items) != 3 {
		t.Fatalf("%d items", len(items))
	}
	in := items[0].Input
	if items[0].Err != nil || in.Backend.Kind != agent.BackendCatalogue || in.Origin == nil ||
		in.Origin.Install != "npx -y @a/files-mcp@0.3.1" || !slices.Contains(in.Tags, "not-hosted") {
		t.Errorf("npm package: %+v %+v %v", in, in.Origin, items[0].Err)
	}
	if err := in.Backend.Validate(); err != nil {
		t.Errorf("catalogue backend: %v", err)
	}
	if o := items[1].Input.Origin; items[1].Err != nil || o == nil || o.Install != "uvx a-py-mcp==1.0.0" {
		t.Errorf("pypi package: %+v %v", o, items[1].Err)
	}
	if items[2].Err == nil {
		t.Errorf("a package identifier with shell characters was listed: %+v", items[2].Input.Origin)
	}
}
