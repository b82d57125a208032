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

// ServerList is the answer of GET /v0.1/servers, as a reader decodes it
// (_meta as maps); the handler writes the same JSON from serverList.
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

// server is ServerResponse as the handler encodes it: the same JSON,
// with _meta as structs rather than maps (encoding/json sorts a map's
// keys, so the structs' fields are in that order: the bytes are the
// same, and the maps' allocations and sorting are gone).
type server struct {
	Server serverDetail  `json:"server"`
	Meta   *responseMeta `json:"_meta,omitempty"`
}

// serverList is ServerList as the handler encodes it.
type serverList struct {
	Servers  []server `json:"servers"`
	Metadata Metadata `json:"metadata"`
}

// serverDetail is ServerDetail as the handler encodes it.
type serverDetail struct {
	Schema      string      `json:"$schema,omitempty"`
	Name        string      `json:"name"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description"`
	Version     string      `json:"version"`
	WebsiteURL  string      `json:"websiteUrl,omitempty"`
	Remotes     []Remote    `json:"remotes,omitempty"`
	Packages    []Package   `json:"packages,omitempty"`
	Meta        *detailMeta `json:"_meta,omitempty"`
}

// responseMeta is a ServerResponse's _meta: the registry's.
type responseMeta struct {
	Official officialMeta `json:"io.modelcontextprotocol.registry/official"`
}

// officialMeta is the registry-managed metadata (Official), its fields
// in the order of their keys.
type officialMeta struct {
	IsLatest    bool   `json:"isLatest"`
	PublishedAt string `json:"publishedAt"`
	Status      string `json:"status"`
	UpdatedAt   string `json:"updatedAt"`
}

// detailMeta is a ServerDetail's _meta: AgentSite's.
type detailMeta struct {
	Agent agentMeta `json:"io.agentsite/agent"`
}

// agentMeta is what AgentSite adds about the agent (AgentMeta), its
// fields in the order of their keys; the omitted ones are a hosted
// agent's (MCPTool, A2ACard) or a catalogue listing's (the others).
type agentMeta struct {
	A2ACard                string        `json:"a2a_card,omitempty"`
	AgentsiteName          string        `json:"agentsite_name"`
	DescriptionPlaceholder bool          `json:"description_placeholder"`
	Health                 string        `json:"health"`
	Host                   string        `json:"host"`
	Hosted                 *bool         `json:"hosted,omitempty"`
	HowToUse               string        `json:"how_to_use"`
	ID                     string        `json:"id"`
	Install                string        `json:"install,omitempty"`
	ListedFrom             *listedFrom   `json:"listed_from,omitempty"`
	MCPTool                string        `json:"mcp_tool,omitempty"`
	Origin                 *agent.Origin `json:"origin"`
	Status                 string        `json:"status"`
	Tags                   []string      `json:"tags"`
}

// listedFrom is a catalogue listing's upstream and who listed it.
type listedFrom struct {
	ListedBy string `json:"listed_by"`
	Name     string `json:"name"`
	Registry string `json:"registry"`
	Version  string `json:"version"`
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
// request or --public-url, names the remotes). The page is read as
// /api/v1/agents reads it (PublicOnly: the index's public-JSON rows, not
// whole listings with their envelopes), the few fields of the record the
// export needs besides the row's columns are read from the public JSON,
// and each server is written straight into the answer (appendPage).
func (h *Handler) listBody(ctx context.Context, q store.SearchQuery, origin string, since time.Time, ver string) ([]byte, error) {
	q.PublicOnly = true
	key := fmt.Sprintf("v0.1/servers\x00%q\x00%s\x00%q", origin, since.Format(time.RFC3339Nano), ver)
	v, err := h.Discover.Answer(ctx, key, q, func(_ context.Context, r discover.Result) (any, error) {
		ls := r.Page.Listings
		return appendPage(make([]byte, 0, 64+1536*len(ls)), ls, r.Page.NextCursor, origin, since, ver)
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

// publicFields are the fields of a record's public JSON that a
// PublicOnly row leaves out of its columns and the export needs.
type publicFields struct {
	Description string           `json:"description"`
	Endpoints   []agent.Endpoint `json:"endpoints"`
	Origin      *agent.Origin    `json:"origin"`
}

// exportFields fills in l's record, read as a PublicOnly row, with what
// the export needs from its public JSON: the description, the endpoints
// and the origin (kept in public_json since it existed, and the origin
// came later, so a row without public_json has none).
func exportFields(l *store.Listing) error {
	if len(l.PublicJSON) == 0 {
		return nil
	}
	f, ok := scanPublic(l.PublicJSON)
	if !ok {
		f = publicFields{}
		if err := json.Unmarshal(l.PublicJSON, &f); err != nil {
			return fmt.Errorf("public JSON of agent %s: %w", l.Record.ID, err)
		}
	}
	l.Record.Description, l.Record.Endpoints = f.Description, f.Endpoints
	if f.Origin != nil {
		l.Record.Origin = f.Origin
	}
	return nil
}

// scanPublic is json.Unmarshal of a public JSON object into publicFields
// that decodes only those fields' values (the endpoints without
// reflection) and skips the others' (the skills, most of the bytes)
// without checking them: a public JSON is the store's own encoding
// (store.PublicRecordJSON). ok false: b is not an object as the scan
// expects it; json.Unmarshal says why.
func scanPublic(b []byte) (f publicFields, ok bool) {
	end := scanObject(b, skipSpace(b, 0), func(key, val []byte) bool {
		switch string(key) {
		case "description":
			f.Description, ok = jsonString(val)
			return ok
		case "endpoints":
			f.Endpoints, ok = scanEndpoints(val)
			return ok
		case "origin":
			return json.Unmarshal(val, &f.Origin) == nil
		}
		return true
	})
	return f, end >= 0 && skipSpace(b, end) == len(b)
}

// scanEndpoints is json.Unmarshal of a JSON array of agent.Endpoint.
func scanEndpoints(b []byte) ([]agent.Endpoint, bool) {
	if string(b) == "null" {
		return nil, true
	}
	if len(b) < 2 || b[0] != '[' {
		return nil, false
	}
	out := []agent.Endpoint{}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == ']' {
		return out, skipSpace(b, i+1) == len(b)
	}
	for {
		var e agent.Endpoint
		i = scanObject(b, i, func(key, val []byte) bool {
			var v *string
			switch string(key) {
			case "kind":
				v = &e.Kind
			case "peer_id":
				v = &e.PeerID
			case "protocol":
				v = &e.Protocol
			case "url":
				v = &e.URL
			default:
				return true
			}
			var ok bool
			*v, ok = jsonString(val)
			return ok
		})
		if i < 0 {
			return nil, false
		}
		out = append(out, e)
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// scanObject calls field with each key (unescaped keys only) and raw
// value of the JSON object at b[i] and is the index just past it, or -1
// when it is not an object or field returns false.
func scanObject(b []byte, i int, field func(key, val []byte) bool) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		end := skipString(b, i)
		if end < 0 {
			return -1
		}
		key := b[i+1 : end-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return -1
		}
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return -1
		}
		start := skipSpace(b, i+1)
		if i = skipValue(b, start); i < 0 || !field(key, b[start:i]) {
			return -1
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1
		default:
			return -1
		}
	}
}

// jsonString is json.Unmarshal of the JSON string b, without its copies
// when it has no escapes.
func jsonString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' {
		return "", false
	}
	if raw := b[1 : len(b)-1]; bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), true
	}
	var s string
	return s, json.Unmarshal(b, &s) == nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString is the index just past the JSON string at b[i] ('"'), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		escapes := 0
		for p := q - 1; p > i && b[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// skipValue is the index just past the JSON value at b[i], or -1: a
// string, an object or array (to its matching close, strings skipped
// whole), or a literal (to the next delimiter).
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
			j++
		}
		if j == i {
			return -1
		}
		return j
	}
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
	s := fromListing(l, httpkit.Origin(r, h.PublicURL))
	if listVersions {
		httpkit.WriteJSON(w, http.StatusOK, serverList{Servers: []server{s}, Metadata: Metadata{Count: 1}})
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
func upstream(rec agent.Record) (*agent.Origin, bool) { return upstreamOf(rec.Origin) }

// upstreamOf is upstream of a record whose origin is o.
func upstreamOf(o *agent.Origin) (*agent.Origin, bool) {
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

// fromListing is l as a registry server, reached through origin's /mcp;
// a catalogue listing (a package-only server, hosted nowhere) is its
// packages, with no remote.
func fromListing(l store.Listing, origin string) server {
	l = withOrigin(l) // once: it scans the envelope (a page of 100 did it 300 times)
	rec := l.Record
	line := install(rec)
	desc := firstChars(oneSpaced(rec.Description), maxDescription)
	placeholder := desc == ""
	if placeholder {
		// The registry requires a description (minLength 1); the listing
		// has none, and says so rather than passing its title off as one.
		desc = NoDescription
	}
	version := cmpOr(rec.Version, defaultVersion)
	own := ServerName(rec)
	name := own
	if up, ok := upstream(rec); ok && l.Local {
		// An import keeps its identity in the registry it came from, so
		// a client that knows it there finds it here under the same name;
		// the AgentSite name stays in _meta.
		name = up.Name
		if up.Version != "" {
			version = up.Version
		}
	}
	health := l.Health.State
	if health == "" {
		health = agent.HealthUnknown
	}
	out := server{
		Server: serverDetail{
			Name:        name,
			Title:       firstChars(rec.DisplayName, maxDescription),
			Description: desc,
			Version:     version,
			WebsiteURL:  origin + "/agents/" + rec.ID,
			Meta: &detailMeta{Agent: agentMeta{
				ID:            rec.ID,
				Status:        l.Status,
				Health:        health,
				Host:          l.HostPeerID,
				Tags:          rec.Tags,
				HowToUse:      "call send_message with this agent_id on the remote, or use the A2A card",
				AgentsiteName: own,
				Origin:        rec.Origin,
				// true: the server's description is NoDescription, standing in
				// for the listing's empty one (a reader may show nothing).
				DescriptionPlaceholder: placeholder,
			}},
		},
		Meta: &responseMeta{Official: officialMeta{
			Status:      "active",
			PublishedAt: rec.IssuedAt.UTC().Format(time.RFC3339),
			UpdatedAt:   l.UpdatedAt.UTC().Format(time.RFC3339),
			IsLatest:    true,
		}},
	}
	if line != "" {
		return fromCatalogue(out, l, line)
	}
	m := &out.Server.Meta.Agent
	m.MCPTool = "send_message"
	m.A2ACard = origin + "/a2a/" + rec.ID + "/agent-card.json"
	out.Server.Remotes = []Remote{{Type: "streamable-http", URL: origin + "/mcp"}}
	for _, e := range rec.Endpoints {
		if e.Kind == agent.EndpointHTTPMCP && e.URL != "" {
			out.Server.Remotes = append(out.Server.Remotes, Remote{Type: "streamable-http", URL: e.URL})
		}
	}
	return out
}

// fromCatalogue is a catalogue listing as a registry server (out, as
// fromListing made it): its package (read back from its install line)
// and no remote, since no node answers for it, and _meta saying where
// the listing came from and how to run it.
func fromCatalogue(out server, l store.Listing, line string) server {
	rec := l.Record
	if p, ok := bulk.PackageOf(line); ok {
		out.Server.Packages = []Package{{RegistryType: p.RegistryType, Identifier: p.Identifier, Version: p.Version,
			RuntimeHint: p.RuntimeHint, Transport: Transport{Type: "stdio"}}}
	}
	m := &out.Server.Meta.Agent
	// Not reachable here or anywhere: its host's status is the listing's,
	// not the server's.
	hosted := false
	m.Hosted = &hosted
	m.Status = "not-hosted"
	m.Health = agent.HealthUnknown
	m.Install = line
	m.HowToUse = "install and run it locally (stdio): " + line + "; no node answers for it"
	m.ListedFrom = &listedFrom{Registry: rec.Origin.Registry, Name: rec.Origin.Name,
		Version: rec.Origin.Version, ListedBy: l.HostPeerID}
	return out
}

// oneSpaced is strings.Join(strings.Fields(s), " "), without the copies
// when s is already so (most descriptions are).
func oneSpaced(s string) string {
	prev := byte(' ')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80 || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r' || (c == ' ' && prev == ' '):
			return strings.Join(strings.Fields(s), " ")
		}
		prev = c
	}
	if prev == ' ' && s != "" {
		return strings.Join(strings.Fields(s), " ")
	}
	return s
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
