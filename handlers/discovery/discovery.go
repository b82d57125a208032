// Package discovery serves what lets others find this node's agents
// without asking it anything else first: the AI Catalog at
// /.well-known/ai-catalog.json (application/ai-catalog+json, the
// ards-project and Agent-Card ai-catalog drafts): an entry per local agent
// for its A2A card and one for its MCP server card, one for the node's ARD
// registry, and a host Trust Manifest signed with the node key; and the
// MCP server cards (SEP-2127: <mcp url>/server-card, and the older
// /.well-known/mcp/server-card.json) of the node's /mcp and of each local
// agent (its tool on /mcp).
package discovery

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// MediaType is the AI Catalog's media type.
const MediaType = "application/ai-catalog+json"

// Paths.
const (
	CatalogPath          = "/.well-known/ai-catalog.json"
	LegacyServerCardPath = "/.well-known/mcp/server-card.json"
)

// Bounds and caching.
const (
	// PageAgents is how many local agents one catalog document lists;
	// past it the document ends with a nested catalog entry for the next
	// page (ai-catalog's nesting), so a host of 100k agents serves pages
	// of a bounded size.
	PageAgents = 500
	// maxAge is the Cache-Control max-age of catalogs and cards, and how
	// long the node reuses a built document.
	maxAge = 60 * time.Second
)

// Catalog is what the surface reads.
type Catalog interface {
	LocalRefs(ctx context.Context, q store.LocalQuery) ([]store.LocalRef, error)
	GetAgent(ctx context.Context, id string) (store.Listing, error)
}

// Handler serves the catalog and the server cards.
type Handler struct {
	Catalog Catalog
	PeerID  string
	// Key signs the Trust Manifest; nil: the manifest goes unsigned.
	Key crypto.PrivKey
	// NodeName is the node's display name ("": "AgentSite node <id>").
	NodeName string
	// Domains are the domains this node proved (agent/verify); nil: none.
	Domains func() []string
	// PublicURL is --public-url ("": the request's origin).
	PublicURL string
	Version   string
	Now       func() time.Time
	Fail      func(w http.ResponseWriter, r *http.Request, err error)

	mu    sync.Mutex
	built map[string]builtDoc
}

type builtDoc struct {
	body []byte
	etag string
	at   time.Time
}

// Manifest is an AI Catalog document.
type Manifest struct {
	SpecVersion string      `json:"specVersion"`
	Host        *Host       `json:"host,omitempty"`
	Entries     []ard.Entry `json:"entries"`
}

// Host is the catalog's publisher.
type Host struct {
	DisplayName   string         `json:"displayName"`
	Identifier    string         `json:"identifier,omitempty"`
	TrustManifest *TrustManifest `json:"trustManifest,omitempty"`
}

// ServeCatalog is GET /.well-known/ai-catalog.json[?after=<agent id>].
func (h *Handler) ServeCatalog(w http.ResponseWriter, r *http.Request) {
	after := r.URL.Query().Get("after")
	if after != "" && !agent.ValidID(after) {
		http.Error(w, "after: an agent id from the previous page's last entry", http.StatusBadRequest)
		return
	}
	origin := httpkit.Origin(r, h.PublicURL)
	doc, err := h.document(r.Context(), origin, after)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	serveCached(w, r, MediaType, doc)
}

// serveCached writes a built document with its ETag and Cache-Control, or
// 304 when the client has it.
func serveCached(w http.ResponseWriter, r *http.Request, mediaType string, doc builtDoc) {
	w.Header().Set("ETag", doc.etag)
	w.Header().Set("Cache-Control", "public, max-age="+strconv.Itoa(int(maxAge.Seconds())))
	w.Header().Set("Vary", "Host, X-Forwarded-Host, X-Forwarded-Proto")
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatch(inm, doc.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", mediaType)
	w.Header().Set("Content-Length", strconv.Itoa(len(doc.body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(doc.body)
}

func etagMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == etag || t == "*" {
			return true
		}
	}
	return false
}

// cached is the document of key built within maxAge, else build's.
func (h *Handler) cached(key string, build func() ([]byte, error)) (builtDoc, error) {
	now := h.now()
	h.mu.Lock()
	if d, ok := h.built[key]; ok && now.Sub(d.at) < maxAge {
		h.mu.Unlock()
		return d, nil
	}
	h.mu.Unlock()
	body, err := build()
	if err != nil {
		return builtDoc{}, err
	}
	d := builtDoc{body: body, etag: etagOf(body), at: now}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.built == nil || len(h.built) > 256 {
		h.built = map[string]builtDoc{}
	}
	h.built[key] = d
	return d, nil
}

func etagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// document is the catalog page after the agent id after ("" : the first).
func (h *Handler) document(ctx context.Context, origin, after string) (builtDoc, error) {
	return h.cached("catalog\x00"+origin+"\x00"+after, func() ([]byte, error) {
		m, err := h.Manifest(ctx, origin, after)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(m); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

// Manifest builds a catalog page: the host with its signed Trust
// Manifest, the registry (first page only), an A2A card entry and an MCP
// server card entry per local agent, and a nested catalog entry for the
// next page when there is one.
func (h *Handler) Manifest(ctx context.Context, origin, after string) (Manifest, error) {
	m := Manifest{SpecVersion: "1.0", Entries: []ard.Entry{}}
	host, err := h.host()
	if err != nil {
		return m, err
	}
	m.Host = host
	var domains []string
	if h.Domains != nil {
		domains = h.Domains()
	}
	if after == "" {
		m.Entries = append(m.Entries, ard.Entry{
			Identifier:  ard.URNIn(h.PeerID, ard.NamespaceRegistry, "ard"),
			DisplayName: host.DisplayName + " registry",
			Type:        ard.TypeRegistry,
			MediaType:   ard.TypeRegistry,
			URL:         origin + ard.BasePath,
			Description: "The ARD registry of this AgentSite node: every agent it knows of on the planet, searchable (POST /search, GET /agents, POST /explore).",
			Tags:        []string{"registry", "agentsite"},
			Metadata:    map[string]any{"agentsite.peerId": h.PeerID},
		})
	}
	refs, err := h.Catalog.LocalRefs(ctx, store.LocalQuery{After: after, Limit: PageAgents + 1})
	if err != nil {
		return m, err
	}
	more := len(refs) > PageAgents
	if more {
		refs = refs[:PageAgents]
	}
	for _, ref := range refs {
		l, err := h.Catalog.GetAgent(ctx, ref.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return m, err
		}
		if l.Record.Tombstone || !l.Local {
			continue
		}
		for _, t := range []string{ard.TypeA2A, ard.TypeMCP} {
			e := ard.EntryOf(l, origin, t, domains)
			e.Score = 0
			m.Entries = append(m.Entries, e)
		}
	}
	if more {
		last := refs[len(refs)-1].ID
		m.Entries = append(m.Entries, ard.Entry{
			Identifier:  ard.URNIn(h.PeerID, "catalog", "after-"+last),
			DisplayName: host.DisplayName + ": more agents",
			Type:        ard.TypeCatalog,
			MediaType:   ard.TypeCatalog,
			URL:         origin + CatalogPath + "?after=" + last,
			Description: "The next page of this node's agents.",
		})
	}
	return m, nil
}

// host is the catalog's host, with the Trust Manifest signed by the node
// key.
func (h *Handler) host() (*Host, error) {
	name := h.NodeName
	if name == "" {
		name = "AgentSite node " + short(h.PeerID)
	}
	host := &Host{DisplayName: name}
	pid, err := peer.Decode(h.PeerID)
	if err != nil {
		return host, nil
	}
	did, err := DIDKey(pid)
	if err != nil {
		return host, nil
	}
	host.Identifier = did
	tm := TrustManifest{Identity: did, IdentityType: "did"}
	if h.Domains != nil {
		for _, d := range h.Domains() {
			tm.Attestations = append(tm.Attestations, Attestation{
				Type: "publisher-identity", URI: "https://" + d + "/.well-known/agentsite.json", MediaType: "application/json"})
		}
	}
	if h.Key != nil {
		if tm, err = SignManifest(tm, h.Key, h.PeerID); err != nil {
			return nil, err
		}
	}
	host.TrustManifest = &tm
	return host, nil
}

func short(id string) string {
	if len(id) > 12 {
		return id[len(id)-8:]
	}
	return id
}
