package bulk

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// Server is the part of an MCP Registry server.json this import reads.
type Server struct {
	Name        string    `json:"name"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Version     string    `json:"version"`
	Remotes     []Remote  `json:"remotes"`
	Packages    []Package `json:"packages"`
}

// Package is one of a server's packages (what its users install and run
// themselves, over stdio).
type Package struct {
	RegistryType string `json:"registryType"`
	Identifier   string `json:"identifier"`
	Version      string `json:"version"`
	RuntimeHint  string `json:"runtimeHint"`
}

// installLine is how to run p: npx, uvx, docker, or the registry's name.
func (p Package) installLine() string {
	id := strings.TrimSpace(p.Identifier)
	if id == "" || strings.ContainsAny(id, " \t\n;&|$`") {
		return ""
	}
	v := strings.TrimSpace(p.Version)
	switch p.RegistryType {
	case "npm":
		if v != "" {
			id += "@" + v
		}
		return "npx -y " + id
	case "pypi":
		if v != "" {
			id += "==" + v
		}
		return "uvx " + id
	case "oci":
		if v != "" && !strings.Contains(id, ":") {
			id += ":" + v
		}
		return "docker run -i --rm " + id
	case "nuget":
		if v != "" {
			id += "@" + v
		}
		return "dnx " + id
	}
	return strings.TrimSpace(p.RegistryType + " " + id + " " + v)
}

// Remote is one of a server's remote transports.
type Remote struct {
	Type      string `json:"type"`
	URL       string `json:"url"`
	Variables map[string]struct {
		Default string `json:"default"`
	} `json:"variables"`
}

// resolved is r's URL with each {variable} replaced by its default;
// placeholder is what is left unfilled ("" when nothing is): a {variable}
// without a default, or a <PLACEHOLDER> written into the URL (the
// registry has servers listed with a literal <YOUR_TOKEN>).
func (r Remote) resolved() (u, placeholder string) {
	u = r.URL
	for name, v := range r.Variables {
		if v.Default != "" {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	return u, placeholderIn(u)
}

// placeholderIn is the first unfilled placeholder of u: {…} or <…> (also
// percent-encoded, as %7B…%7D or %3C…%3E), or "".
func placeholderIn(u string) string {
	for _, p := range [][2]string{{"{", "}"}, {"<", ">"}, {"%7B", "%7D"}, {"%3C", "%3E"}, {"%7b", "%7d"}, {"%3c", "%3e"}} {
		if i := strings.Index(u, p[0]); i >= 0 {
			if j := strings.Index(u[i:], p[1]); j >= 0 {
				return u[i : i+j+len(p[1])]
			}
			return u[i:]
		}
	}
	if i := strings.IndexAny(u, "}>"); i >= 0 {
		return u[i:]
	}
	return ""
}

// serverEntry is an item of /v0.1/servers' "servers": {"server": {...},
// "_meta": {...}} (v0.1), or a bare server.json (older lists, files).
type serverEntry struct {
	Wrapped *Server `json:"server"`
	Server
}

// mcpServers streams the "servers" array of a /v0.1/servers response (or a
// bare JSON array of server.json documents) without reading it whole.
func mcpServers(r io.Reader, tool string) iter.Seq[registry.BatchItem] {
	return func(yield func(registry.BatchItem) bool) {
		dec := json.NewDecoder(io.LimitReader(r, 1<<40))
		i := 0
		fail := func(err error) { yield(registry.BatchItem{Index: i, Err: err}) }
		if err := seekServers(dec); err != nil {
			fail(err)
			return
		}
		for dec.More() {
			var e serverEntry
			if err := dec.Decode(&e); err != nil {
				fail(fmt.Errorf("server %d: not a server.json entry: %w", i+1, err))
				return
			}
			s := e.Server
			if e.Wrapped != nil {
				s = *e.Wrapped
			}
			in, err := FromServer(s, tool)
			if err != nil {
				err = fmt.Errorf("server %d (%s): %w", i+1, s.Name, err)
			}
			if !yield(registry.BatchItem{Index: i, Input: in, Err: err}) {
				return
			}
			i++
		}
	}
}

// seekServers moves dec into the servers array: the top-level array, or
// the value of the object's "servers" key.
func seekServers(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not an MCP Registry server list: %w", err)
	}
	if tok == json.Delim('[') {
		return nil
	}
	if tok != json.Delim('{') {
		return errors.New(`not an MCP Registry server list: want {"servers": [...]} or an array`)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not an MCP Registry server list: %w", err)
		}
		if key == "servers" {
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				return errors.New(`not an MCP Registry server list: "servers" is not an array`)
			}
			return nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("not an MCP Registry server list: %w", err)
		}
	}
	return errors.New(`not an MCP Registry server list: no "servers" key`)
}

// catalogueOnly is the registration of a server with packages and no
// remote: a catalogue listing (BackendCatalogue) with its install line,
// which the hub shows and search finds, and no node answers for.
func catalogueOnly(s Server) (registry.Input, error) {
	install := ""
	for _, p := range s.Packages {
		if install = p.installLine(); install != "" {
			break
		}
	}
	if install == "" {
		return registry.Input{}, errors.New("it has no remote (streamable-http or sse) and no package to install; there is nothing to list")
	}
	short := s.Name
	if i := strings.LastIndexByte(short, '/'); i >= 0 {
		short = short[i+1:]
	}
	return registry.Input{
		Name:        Slug(s.Name),
		DisplayName: cut(cmpOr(strings.TrimSpace(s.Title), short), agent.MaxDisplayNameLen),
		Description: cut(s.Description, agent.MaxDescriptionBytes),
		Tags:        []string{"mcp", "not-hosted"},
		Version:     version(s.Version),
		Backend:     agent.Backend{Kind: agent.BackendCatalogue},
		Origin: &agent.Origin{Registry: agent.OriginMCPRegistry, Name: cut(s.Name, agent.MaxOriginNameLen),
			Version: cut(s.Version, agent.MaxOriginVersionLen), Install: cut(install, agent.MaxOriginInstallLen)},
	}, nil
}

// FromServer is the registration of an MCP Registry server: an mcp-backend
// agent on its first streamable-http remote (then its first SSE one),
// calling tool (the registry lists no tools; "": the short name).
func FromServer(s Server, tool string) (registry.Input, error) {
	var url, unfilled, unfilledURL string
	for _, want := range []string{"streamable-http", "sse"} {
		for _, r := range s.Remotes {
			if r.Type != want || url != "" {
				continue
			}
			u, ph := r.resolved()
			if ph != "" {
				if unfilled == "" {
					unfilled, unfilledURL = ph, r.URL
				}
				continue
			}
			url = u
		}
	}
	switch {
	case url == "" && unfilled != "":
		return registry.Input{}, fmt.Errorf("its remote URL %q has an unfilled placeholder %s (a variable without a default, or a value the user must fill in); it cannot be listed as it is: list it with the value filled in", cut(unfilledURL, 200), cut(unfilled, 64))
	case url == "":
		return catalogueOnly(s)
	}
	short := s.Name
	if i := strings.LastIndexByte(short, '/'); i >= 0 {
		short = short[i+1:]
	}
	display := strings.TrimSpace(s.Title)
	if display == "" {
		display = short
	}
	if tool == "" {
		tool = short
	}
	return registry.Input{
		Name:        Slug(s.Name),
		DisplayName: cut(display, agent.MaxDisplayNameLen),
		Description: cut(s.Description, agent.MaxDescriptionBytes),
		Tags:        []string{"mcp"},
		Version:     version(s.Version),
		Backend:     agent.Backend{Kind: agent.BackendMCP, URL: url, Tool: tool},
		Origin:      &agent.Origin{Registry: agent.OriginMCPRegistry, Name: cut(s.Name, agent.MaxOriginNameLen), Version: cut(s.Version, agent.MaxOriginVersionLen)},
	}, nil
}
