// Package mcpregistry serves the MCP Registry's read API (the
// modelcontextprotocol/registry OpenAPI, /v0.1) on the catalogue, so MCP
// registry aggregators and clients read the planet as if it were a
// registry: every listed agent with an MCP endpoint is a "server" whose
// remote is this node's /mcp (and the agent's own public MCP URL, if its
// record has one). Read-only: publishing goes through AgentSite's own
// registration. Errors are the registry's shape, {"error": "..."}, as its
// clients expect on these paths.
package mcpregistry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/bulk"
	"github.com/agentsite/agentsite/agent/discover"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Paging of /v0.1/servers, as the official registry's.
const (
	DefaultLimit = 30
	MaxLimit     = 100
)

// Namespace prefixes every server name: "agentsite.<agent id>/<agent
// name>", so a name leads back to exactly one listing.
const Namespace = "agentsite."

// Catalog is what the surface reads besides searches (which go through
// Discover).
type Catalog interface {
	GetAgent(ctx context.Context, id string) (store.Listing, error)
}

// Handler serves /v0.1.
type Handler struct {
	Catalog Catalog
	// Discover answers the searches, through the same index and memo as
	// GET /api/v1/agents.
	Discover *discover.Discover
	// PublicURL is --public-url ("" : the request's origin).
	PublicURL string
	// Fail answers a server fault (logged, never leaked); nil: a plain 500.
	Fail func(w http.ResponseWriter, r *http.Request, err error)
}

// ServerList is the answer of GET /v0.1/servers.
type ServerList struct {
	Servers  []ServerResponse `json:"servers"`
	Metadata Metadata         `json:"metadata"`
}

// Metadata pages a ServerList.
type Metadata struct {
	NextCursor string `json:"nextCursor,omitempty"`
	Count      int    `json:"count"`
}

// ServerResponse is one server with the registry's metadata.
type ServerResponse struct {
	Server ServerDetail   `json:"server"`
	Meta   map[string]any `json:"_meta,omitempty"`
}

// ServerDetail is a server.json.
type ServerDetail struct {
	Schema      string         `json:"$schema,omitempty"`
	Name        string         `json:"name"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description"`
	Version     string         `json:"version"`
	WebsiteURL  string         `json:"websiteUrl,omitempty"`
	Remotes     []Remote       `json:"remotes,omitempty"`
	Packages    []Package      `json:"packages,omitempty"`
	Meta        map[string]any `json:"_meta,omitempty"`
}

// Package is a server.json package: what its users install and run
// themselves, over stdio.
type Package struct {
	RegistryType string    `json:"registryType"`
	Identifier   string    `json:"identifier"`
	Version      string    `json:"version,omitempty"`
	RuntimeHint  string    `json:"runtimeHint,omitempty"`
	Transport    Transport `json:"transport"`
}

// Transport is a package's transport.
type Transport struct {
	Type string `json:"type"`
}

// Remote is a remote transport.
type Remote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Official is the registry-managed metadata key.
const Official = "io.modelcontextprotocol.registry/official"

// AgentMeta is the key of what AgentSite adds about the agent.
const AgentMeta = "io.agentsite/agent"

// defaultVersion stands in for a listing without a version (the registry
// requires one).
const defaultVersion = "0.0.0"

// NoDescription is the server description of a listing without one:
// the registry's server.json requires a non-empty description (minLength
// 1), and AgentSite keeps the listing's own empty (the hub says
// "No description." rather than repeat the title), so the export says the same, marked as a
// placeholder in _meta (AgentMeta "description_placeholder": true), never
// the title passed off as a description.
const NoDescription = "No description."

// maxDescription is the registry's bound on a server's description (in
// characters).
const maxDescription = 100

type errorBody struct {
	Error string `json:"error"`
}

func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	httpkit.WriteJSON(w, status, errorBody{Error: msg})
}

func (h *Handler) fault(w http.ResponseWriter, r *http.Request, err error) {
	e := httpkit.Classify(err)
	if e == httpkit.ErrInternal && h.Fail != nil {
		h.Fail(w, r, err)
		return
	}
	httpkit.SetRetryAfter(w, e)
	h.fail(w, r, e.Status, e.Message)
}

// List is GET /v0.1/servers?search&cursor&limit&updated_since.
func (h *Handler) List(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := store.SearchQuery{Q: strings.TrimSpace(v.Get("search")), Cursor: v.Get("cursor"), Limit: DefaultLimit}
	if len(q.Q) > 256 {
		h.fail(w, r, http.StatusBadRequest, "search: at most 256 bytes")
		return
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxLimit {
			h.fail(w, r, http.StatusBadRequest, "limit: must be a number from 1 to 100")
			return
		}
		q.Limit = n
	}
	if _, _, err := store.DecodeCursor(q.Cursor); err != nil {
		h.fail(w, r, http.StatusBadRequest, "cursor: invalid; start again without one")
		return
	}
	var since time.Time
	if s := v.Get("updated_since"); s != "" {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			h.fail(w, r, http.StatusBadRequest, "updated_since: must be an RFC 3339 time, e.g. 2025-08-07T13:15:04Z")
			return
		}
		since = t
	}
	if ver := v.Get("version"); ver != "" && ver != "latest" {
		// Every listing has one version, the latest; filter on it below.
		q.Limit = MaxLimit
	}
	body, err := h.listBody(r.Context(), q, httpkit.Origin(r, h.PublicURL), since, v.Get("version"))
	if err != nil {
		h.fault(w, r, err)
		return
	}
	httpkit.WriteJSONBody(w, body)
}

// listBody is the encoded answer to a search, kept by the read cache's
// memo as GET /api/v1/agents's is (discover.Answer): a repeated search
// costs a map look-up, not a search and an encoding of the page.
// Everything the answer depends on is in the key (the origin, from the
// request or --public-url, names the remotes).
func (h *Handler) listBody(ctx context.Context, q store.SearchQuery, origin string, since time.Time, ver string) ([]byte, error) {
	key := fmt.Sprintf("v0.1/servers\x00%q\x00%s\x00%q", origin, since.Format(time.RFC3339Nano), ver)
	v, err := h.Discover.Answer(ctx, key, q, func(_ context.Context, r discover.Result) (any, error) {
		out := ServerList{Servers: []ServerResponse{}, Metadata: Metadata{NextCursor: r.Page.NextCursor}}
		for _, l := range r.Page.Listings {
			if !exported(l.Record) || (!since.IsZero() && l.UpdatedAt.Before(since)) {
				continue
			}
			s := FromListing(l, origin)
			if ver != "" && ver != "latest" && s.Server.Version != ver {
				continue
			}
			out.Servers = append(out.Servers, s)
		}
		out.Metadata.Count = len(out.Servers)
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(true)
		if err := enc.Encode(out); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// Server is GET /v0.1/servers/{serverName}/versions[/{version}]: the
// listing's one version (the latest), or the list of it.
func (h *Handler) Server(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/v0.1/servers/")
	var rawName, ver string
	listVersions := false
	switch {
	case strings.HasSuffix(rest, "/versions"):
		rawName, listVersions = strings.TrimSuffix(rest, "/versions"), true
	case strings.Contains(rest, "/versions/"):
		i := strings.LastIndex(rest, "/versions/")
		rawName, ver = rest[:i], rest[i+len("/versions/"):]
	default:
		h.fail(w, r, http.StatusNotFound, "Not found")
		return
	}
	name, err1 := url.PathUnescape(rawName)
	ver, err2 := url.PathUnescape(ver)
	if err1 != nil || err2 != nil {
		h.fail(w, r, http.StatusNotFound, "Server not found")
		return
	}
	l, err := h.lookup(r.Context(), name)
	if errors.Is(err, errNoServer) {
		h.fail(w, r, http.StatusNotFound, "Server not found")
		return
	}
	if err != nil {
		h.fault(w, r, err)
		return
	}
	s := FromListing(l, httpkit.Origin(r, h.PublicURL))
	if listVersions {
		httpkit.WriteJSON(w, http.StatusOK, ServerList{Servers: []ServerResponse{s}, Metadata: Metadata{Count: 1}})
		return
	}
	if ver != "latest" && ver != s.Server.Version {
		h.fail(w, r, http.StatusNotFound, "Server version not found")
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, s)
}

var errNoServer = errors.New("no such server")

// lookupUpstream finds an imported listing by its upstream name: a search
// for the name's last part, the first listing (hosts this node hears
// first) whose origin is that name.
func (h *Handler) lookupUpstream(ctx context.Context, name, short string) (store.Listing, error) {
	words := strings.Join(strings.FieldsFunc(short, func(r rune) bool { return r == '-' || r == '_' || r == '.' }), " ")
	page, err := h.Discover.Search(ctx, store.SearchQuery{Q: words, Limit: MaxLimit})
	if err != nil {
		return store.Listing{}, err
	}
	for _, l := range page.Listings {
		l = withOrigin(l)
		if up, ok := upstream(l.Record); ok && l.Local && up.Name == name && exported(l.Record) {
			return l, nil
		}
	}
	return store.Listing{}, errNoServer
}

// lookup finds the listing a server name stands for.
func (h *Handler) lookup(ctx context.Context, name string) (store.Listing, error) {
	ns, short, ok := strings.Cut(name, "/")
	id, isOurs := strings.CutPrefix(ns, Namespace)
	if ok && !isOurs {
		return h.lookupUpstream(ctx, name, short)
	}
	if !ok || !agent.ValidID(id) {
		return store.Listing{}, errNoServer
	}
	l, err := h.Catalog.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return l, errNoServer
	case err != nil:
		return l, err
	case l.Record.Tombstone || l.Record.Name != short || !exported(l.Record):
		return l, errNoServer
	}
	return l, nil
}

// serverNameRe is the registry's pattern of a server name.
var serverNameRe = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// upstream is rec's identity in the MCP Registry it was imported from,
// when it has one the registry's pattern admits. Only this node's own
// imports are served under it: another node's origin is its operator's
// word, and would let any node take a registry name here (it stays in
// _meta).
func upstream(rec agent.Record) (*agent.Origin, bool) {
	o := rec.Origin
	if o == nil || o.Registry != agent.OriginMCPRegistry || len(o.Name) < 3 || !serverNameRe.MatchString(o.Name) ||
		strings.HasPrefix(o.Name, Namespace) {
		return nil, false
	}
	return o, true
}

// withOrigin is l with its record's origin read from its signed envelope
// when the store's columns did not carry it (the engines keep a
// listing's fields in columns, and the origin only in the envelope).
func withOrigin(l store.Listing) store.Listing {
	if l.Record.Origin != nil || len(l.Envelope) == 0 || !bytes.Contains(l.Envelope, []byte(`"origin"`)) {
		return l
	}
	if rec, err := agent.OpenIgnoringExpiry(l.Envelope, time.Now()); err == nil && rec.ID == l.Record.ID {
		l.Record.Origin = rec.Origin
	}
	return l
}

// ServerName is the registry name of agent rec.
func ServerName(rec agent.Record) string { return Namespace + rec.ID + "/" + rec.Name }

// hasMCP reports whether rec can be reached over MCP: through its host
// (every AgentSite agent) or at a public MCP URL of its own.
func hasMCP(rec agent.Record) bool {
	for _, e := range rec.Endpoints {
		if e.Kind == agent.EndpointLibp2pMCP || e.Kind == agent.EndpointHTTPMCP {
			return true
		}
	}
	return false
}

// exported: rec is a registry server, reached over MCP or installed
// from its package (a catalogue listing). The catalogue's origin is
// read from the envelope first (withOrigin).
func exported(rec agent.Record) bool {
	return hasMCP(rec) || install(rec) != ""
}

// install is a catalogue listing's install line ("" for any other): a
// server nobody hosts, whose users run it themselves.
func install(rec agent.Record) string {
	if rec.Origin == nil {
		return ""
	}
	return rec.Origin.Install
}

// FromListing is l as a registry server, reached through origin's /mcp;
// a catalogue listing (a package-only server, hosted nowhere) is its
// packages, with no remote.
func FromListing(l store.Listing, origin string) ServerResponse {
	l = withOrigin(l) // once: it scans the envelope (a page of 100 did it 300 times)
	if line := install(l.Record); line != "" {
		return fromCatalogue(l, origin, line)
	}
	rec := l.Record
	desc := firstChars(strings.Join(strings.Fields(rec.Description), " "), maxDescription)
	placeholder := desc == ""
	if placeholder {
		// The registry requires a description (minLength 1); the listing
		// has none, and says so rather than passing its title off as one.
		desc = NoDescription
	}
	version := cmpOr(rec.Version, defaultVersion)
	name := ServerName(rec)
	if up, ok := upstream(rec); ok && l.Local {
		// An import keeps its identity in the registry it came from, so
		// a client that knows it there finds it here under the same name;
		// the AgentSite name stays in _meta.
		name = up.Name
		if up.Version != "" {
			version = up.Version
		}
	}
	remotes := []Remote{{Type: "streamable-http", URL: origin + "/mcp"}}
	for _, e := range rec.Endpoints {
		if e.Kind == agent.EndpointHTTPMCP && e.URL != "" {
			remotes = append(remotes, Remote{Type: "streamable-http", URL: e.URL})
		}
	}
	health := l.Health.State
	if health == "" {
		health = agent.HealthUnknown
	}
	return ServerResponse{
		Server: ServerDetail{
			Name:        name,
			Title:       firstChars(rec.DisplayName, maxDescription),
			Description: desc,
			Version:     version,
			WebsiteURL:  origin + "/agents/" + rec.ID,
			Remotes:     remotes,
			Meta: map[string]any{AgentMeta: map[string]any{
				"id":             rec.ID,
				"status":         l.Status,
				"health":         health,
				"host":           l.HostPeerID,
				"tags":           rec.Tags,
				"mcp_tool":       "send_message",
				"a2a_card":       origin + "/a2a/" + rec.ID + "/agent-card.json",
				"how_to_use":     "call send_message with this agent_id on the remote, or use the A2A card",
				"agentsite_name": ServerName(rec),
				"origin":         rec.Origin,
				// true: the server's description is NoDescription, standing in
				// for the listing's empty one (a reader may show nothing).
				"description_placeholder": placeholder,
			}},
		},
		Meta: map[string]any{Official: map[string]any{
			"status":      "active",
			"publishedAt": rec.IssuedAt.UTC().Format(time.RFC3339),
			"updatedAt":   l.UpdatedAt.UTC().Format(time.RFC3339),
			"isLatest":    true,
		}},
	}
}

// fromCatalogue is a catalogue listing as a registry server: its package
// (read back from its install line) and no remote, since no node answers
// for it, and _meta saying where the listing came from and how to run it.
func fromCatalogue(l store.Listing, origin, line string) ServerResponse {
	rec := l.Record
	out := FromListing(store.Listing{Record: withoutInstall(rec), Status: l.Status, Health: l.Health,
		HostPeerID: l.HostPeerID, UpdatedAt: l.UpdatedAt, Local: l.Local}, origin)
	out.Server.Remotes = nil
	if p, ok := bulk.PackageOf(line); ok {
		out.Server.Packages = []Package{{RegistryType: p.RegistryType, Identifier: p.Identifier, Version: p.Version,
			RuntimeHint: p.RuntimeHint, Transport: Transport{Type: "stdio"}}}
	}
	meta := out.Server.Meta[AgentMeta].(map[string]any)
	delete(meta, "mcp_tool")
	delete(meta, "a2a_card")
	meta["origin"] = rec.Origin
	// Not reachable here or anywhere: its host's status is the listing's,
	// not the server's.
	meta["hosted"] = false
	meta["status"] = "not-hosted"
	meta["health"] = agent.HealthUnknown
	meta["install"] = line
	meta["how_to_use"] = "install and run it locally (stdio): " + line + "; no node answers for it"
	meta["listed_from"] = map[string]any{"registry": rec.Origin.Registry, "name": rec.Origin.Name,
		"version": rec.Origin.Version, "listed_by": l.HostPeerID}
	return out
}

// withoutInstall is rec with its origin's install line dropped.
func withoutInstall(rec agent.Record) agent.Record {
	o := *rec.Origin
	o.Install = ""
	rec.Origin = &o
	return rec
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// firstChars is s cut to n characters (runes).
func firstChars(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j])
		}
		i++
	}
	return s
}
