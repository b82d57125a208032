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
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Version     string   `json:"version"`
	Remotes     []Remote `json:"remotes"`
}

// Remote is one of a server's remote transports.
type Remote struct {
	Type      string `json:"type"`
	URL       string `json:"url"`
	Variables map[string]struct {
		Default string `json:"default"`
	} `json:"variables"`
}

// resolved is r's URL with each {variable} replaced by its default; ok is
// false when a variable has none.
func (r Remote) resolved() (string, bool) {
	u := r.URL
	for name, v := range r.Variables {
		if v.Default != "" {
			u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
		}
	}
	return u, !strings.ContainsAny(u, "{}")
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

// FromServer is the registration of an MCP Registry server: an mcp-backend
// agent on its first streamable-http remote (then its first SSE one),
// calling tool (the registry lists no tools; "": the short name).
func FromServer(s Server, tool string) (registry.Input, error) {
	var url string
	for _, want := range []string{"streamable-http", "sse"} {
		for _, r := range s.Remotes {
			if u, ok := r.resolved(); ok && r.Type == want && url == "" {
				url = u
			}
		}
	}
	if url == "" {
		return registry.Input{}, errors.New("it has no remote (streamable-http or sse) whose URL variables all have defaults; only remote MCP servers can be listed")
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
	}, nil
}
