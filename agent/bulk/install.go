package bulk

import "strings"

// PackageOf is the package an install line runs: the inverse of
// installLine, so a catalogue listing, which keeps only its install line
// (agent.Origin.Install), can be exported again with its package.
// ok is false for a line of none of installLine's shapes (an operator's
// own line, say): the line is then all there is.
func PackageOf(line string) (p Package, ok bool) {
	f := strings.Fields(line)
	switch {
	case len(f) == 3 && f[0] == "npx" && f[1] == "-y":
		p = Package{RegistryType: "npm", RuntimeHint: "npx"}
		p.Identifier, p.Version = cutVersion(f[2], "@")
	case len(f) == 2 && f[0] == "uvx":
		p = Package{RegistryType: "pypi", RuntimeHint: "uvx"}
		p.Identifier, p.Version, _ = strings.Cut(f[1], "==")
	case len(f) == 5 && f[0] == "docker" && f[1] == "run" && f[2] == "-i" && f[3] == "--rm":
		// An image reference carries its tag.
		p = Package{RegistryType: "oci", RuntimeHint: "docker", Identifier: f[4]}
	case len(f) == 2 && f[0] == "dnx":
		p = Package{RegistryType: "nuget", RuntimeHint: "dnx"}
		p.Identifier, p.Version = cutVersion(f[1], "@")
	case (len(f) == 2 || len(f) == 3) && (f[0] == "npm" || f[0] == "pypi" || f[0] == "nuget"):
		p = Package{RegistryType: f[0], Identifier: f[1]}
		if len(f) == 3 {
			p.Version = f[2]
		}
	default:
		return Package{}, false
	}
	if p.Identifier == "" || p.Version == "latest" {
		return Package{}, false
	}
	return p, true
}

// cutVersion splits id<sep>version at the last sep that is not the first
// character (an npm scope starts with @).
func cutVersion(s, sep string) (id, version string) {
	if i := strings.LastIndex(s, sep); i > 0 {
		return s[:i], s[i+len(sep):]
	}
	return s, ""
}
