package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// FormatAICatalog reads an AI Catalog (ai-catalog.json, ARD §4.1): its A2A
// card entries become a2a agents, its MCP server card entries mcp agents
// (on their first remote without placeholders), its nested catalogs are
// read in turn; other entries (registries, datasets, skills) are refused
// with their type.
const FormatAICatalog = "ai-catalog"

// Bounds of one catalog import (nested catalogs included).
const (
	// MaxCatalogDepth bounds nesting (the document itself is depth 0).
	MaxCatalogDepth = 4
	// MaxCatalogEntries bounds the entries read, nested ones included.
	MaxCatalogEntries = 10_000
	// MaxCatalogBytes bounds one catalog document or server card.
	MaxCatalogBytes = 4 << 20
)

// DocFetcher GETs a JSON document (a nested catalog, an MCP server card)
// through the node's guarded client, at most max bytes.
type DocFetcher func(ctx context.Context, url string, max int64) ([]byte, error)

// catalogDoc is the part of an AI Catalog this import reads.
type catalogDoc struct {
	SpecVersion string         `json:"specVersion"`
	Entries     []catalogEntry `json:"entries"`
}

type catalogEntry struct {
	Identifier  string          `json:"identifier"`
	DisplayName string          `json:"displayName"`
	Type        string          `json:"type"`
	MediaType   string          `json:"mediaType"` // the Agent-Card draft's name for type
	URL         string          `json:"url"`
	Data        json.RawMessage `json:"data"`
	Description string          `json:"description"`
}

// serverCardJSON is what an MCP server card import reads: server.json's
// members, and the card's transport.
type serverCardJSON struct {
	Server
	ServerInfo struct {
		Name    string `json:"name"`
		Title   string `json:"title"`
		Version string `json:"version"`
	} `json:"serverInfo"`
	Transport struct {
		Type     string `json:"type"`
		Endpoint string `json:"endpoint"`
	} `json:"transport"`
}

// catalogItems streams the registrations of the catalog in r.
func catalogItems(ctx context.Context, r io.Reader, opts Options) iter.Seq[registry.BatchItem] {
	return func(yield func(registry.BatchItem) bool) {
		raw, err := io.ReadAll(io.LimitReader(r, MaxCatalogBytes+1))
		if err == nil && len(raw) > MaxCatalogBytes {
			err = fmt.Errorf("the catalog is larger than %d MiB", MaxCatalogBytes>>20)
		}
		if err != nil {
			yield(registry.BatchItem{Err: fmt.Errorf("read the catalog: %w", err)})
			return
		}
		w := catalogWalk{ctx: ctx, opts: opts, yield: yield, seen: map[string]bool{}}
		w.doc(raw, "the catalog", 0)
	}
}

type catalogWalk struct {
	ctx     context.Context
	opts    Options
	yield   func(registry.BatchItem) bool
	seen    map[string]bool // nested catalog URLs already read
	n       int             // items yielded
	entries int
	stopped bool
}

func (w *catalogWalk) emit(in registry.Input, err error) {
	if w.stopped {
		return
	}
	if !w.yield(registry.BatchItem{Index: w.n, Input: in, Err: err}) {
		w.stopped = true
	}
	w.n++
}

// doc reads one catalog document at depth.
func (w *catalogWalk) doc(raw []byte, where string, depth int) {
	var d catalogDoc
	if err := json.Unmarshal(raw, &d); err != nil {
		w.emit(registry.Input{}, fmt.Errorf("%s is not an AI Catalog (application/ai-catalog+json): %w", where, err))
		return
	}
	if d.Entries == nil {
		w.emit(registry.Input{}, fmt.Errorf(`%s is not an AI Catalog: no "entries"`, where))
		return
	}
	for i, e := range d.Entries {
		if w.stopped || w.ctx.Err() != nil {
			return
		}
		w.entries++
		if w.entries > MaxCatalogEntries {
			w.emit(registry.Input{}, fmt.Errorf("more than %d entries (nested catalogs included): the rest is not read", MaxCatalogEntries))
			w.stopped = true
			return
		}
		label := fmt.Sprintf("%s, entry %d (%s)", where, i+1, cmpOr(e.Identifier, e.DisplayName))
		w.entry(e, label, depth)
	}
}

func (w *catalogWalk) entry(e catalogEntry, label string, depth int) {
	typ := cmpOr(e.Type, e.MediaType)
	if (e.URL == "") == (len(e.Data) == 0) {
		w.emit(registry.Input{}, fmt.Errorf(`%s: an entry has exactly one of "url" and "data"`, label))
		return
	}
	switch typ {
	case "application/ai-catalog+json":
		if depth+1 > MaxCatalogDepth {
			w.emit(registry.Input{}, fmt.Errorf("%s: nested deeper than %d catalogs; not read", label, MaxCatalogDepth))
			return
		}
		raw := []byte(e.Data)
		if e.URL != "" {
			if w.seen[e.URL] {
				return // read already (a cycle, or listed twice)
			}
			w.seen[e.URL] = true
			var err error
			if raw, err = w.fetch(e.URL); err != nil {
				w.emit(registry.Input{}, fmt.Errorf("%s: %w", label, err))
				return
			}
		}
		w.doc(raw, "the catalog "+cmpOr(e.URL, e.Identifier), depth+1)
	case "application/a2a-agent-card+json", "application/agent-card+json":
		if e.URL != "" {
			if w.opts.FetchCard == nil {
				w.emit(registry.Input{}, fmt.Errorf("%s: card URLs cannot be fetched here", label))
				return
			}
			c, err := w.opts.FetchCard(w.ctx, e.URL)
			if err != nil {
				w.emit(registry.Input{}, fmt.Errorf("%s: fetch card %s: %w", label, e.URL, err))
				return
			}
			in := FromCard(c, e.URL)
			in.Origin = catalogOrigin(e, c.Version)
			w.emit(in, nil)
			return
		}
		in, err := decodeCardItem(w.ctx, e.Data, w.opts.FetchCard)
		if err != nil {
			err = fmt.Errorf("%s: %w", label, err)
		}
		w.emit(in, err)
	case "application/mcp-server-card+json":
		raw := []byte(e.Data)
		if e.URL != "" {
			var err error
			if raw, err = w.fetch(e.URL); err != nil {
				w.emit(registry.Input{}, fmt.Errorf("%s: %w", label, err))
				return
			}
		}
		var c serverCardJSON
		if err := json.Unmarshal(raw, &c); err != nil {
			w.emit(registry.Input{}, fmt.Errorf("%s: not an MCP server card: %w", label, err))
			return
		}
		s := c.Server
		s.Name = cmpOr(s.Name, c.ServerInfo.Name)
		s.Title = cmpOr(s.Title, cmpOr(c.ServerInfo.Title, e.DisplayName))
		s.Version = cmpOr(s.Version, c.ServerInfo.Version)
		if len(s.Remotes) == 0 && c.Transport.Endpoint != "" {
			s.Remotes = []Remote{{Type: cmpOr(c.Transport.Type, "streamable-http"), URL: c.Transport.Endpoint}}
		}
		if s.Name == "" {
			s.Name = e.DisplayName
		}
		in, err := FromServer(s, w.opts.MCPTool)
		if err != nil {
			err = fmt.Errorf("%s: %w", label, err)
		}
		in.Origin = catalogOrigin(e, s.Version)
		w.emit(in, err)
	default:
		w.emit(registry.Input{}, fmt.Errorf("%s: a %s entry is not an agent this node can list (A2A cards, MCP server cards and nested catalogs are)", label, cmpOr(typ, "typeless")))
	}
}

// catalogOrigin is the origin of an entry: its identifier in an AI
// Catalog (nil without one).
func catalogOrigin(e catalogEntry, version string) *agent.Origin {
	if e.Identifier == "" {
		return nil
	}
	return &agent.Origin{Registry: "ai-catalog", Name: cut(e.Identifier, agent.MaxOriginNameLen), Version: cut(version, agent.MaxOriginVersionLen)}
}

func (w *catalogWalk) fetch(url string) ([]byte, error) {
	if w.opts.FetchDoc == nil {
		return nil, errors.New("URLs cannot be fetched here: give the document inline (data)")
	}
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return nil, fmt.Errorf("%q is not an http(s) URL", url)
	}
	b, err := w.opts.FetchDoc(w.ctx, url, MaxCatalogBytes)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", url, err)
	}
	return b, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
