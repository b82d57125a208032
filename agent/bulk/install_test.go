package bulk

import "testing"

// PackageOf reads back every install line installLine writes, and refuses
// lines of other shapes.
func TestPackageOfReadsInstallLines(t *testing.T) {
	for _, p := range []Package{
		{RegistryType: "npm", Identifier: "@scope/server", Version: "1.0.0", RuntimeHint: "npx"},
		{RegistryType: "npm", Identifier: "plain-server", RuntimeHint: "npx"},
		{RegistryType: "pypi", Identifier: "mcp-server-time", Version: "0.6.2", RuntimeHint: "uvx"},
		{RegistryType: "nuget", Identifier: "Some.Server", Version: "2.1.0", RuntimeHint: "dnx"},
		{RegistryType: "oci", Identifier: "ghcr.io/o/server:1.2", RuntimeHint: "docker"},
	} {
		line := p.installLine()
		got, ok := PackageOf(line)
		if !ok || got != p {
			t.Errorf("PackageOf(%q) = %+v %v, want %+v", line, got, ok, p)
		}
	}
	for _, line := range []string{"", "curl x | sh", "npx -y", "npx -y pkg@latest", "mcpb https://x/y.mcpb"} {
		if p, ok := PackageOf(line); ok {
			t.Errorf("PackageOf(%q) = %+v, want none", line, p)
		}
	}
}
