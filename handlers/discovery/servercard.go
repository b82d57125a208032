package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/handlers/mcpserver"
	"github.com/agentsite/agentsite/store"
)

// ServerCardMediaType is an MCP server card's media type.
const ServerCardMediaType = "application/mcp-server-card+json"

// ServerCardSchema is the server card's JSON Schema, which every card
// names in its required $schema member (the v1 family, versioned in place).
const ServerCardSchema = "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"

// Bounds of the server card schema: description and title are 1 to 100
// characters.
const maxCardText = 100

// noDescription stands in for an agent's empty description (the schema
// requires one), as the registry export does.
const noDescription = "No description."

// ServerCard is an MCP server card (SEP-2127, experimental): who the
// server is, how to reach it and what it offers, before connecting. It
// carries the server.json members MCP registries read (name, version,
// description, remotes) and the card's own (serverInfo, protocolVersion,
// transport, capabilities, tools).
type ServerCard struct {
	Schema          string         `json:"$schema"`
	Name            string         `json:"name"`
	Title           string         `json:"title,omitempty"`
	Description     string         `json:"description"`
	Version         string         `json:"version"`
	ServerInfo      ServerInfo     `json:"serverInfo"`
	ProtocolVersion string         `json:"protocolVersion"`
	Transport       Transport      `json:"transport"`
	Remotes         []Remote       `json:"remotes"`
	Capabilities    map[string]any `json:"capabilities"`
	Authentication  map[string]any `json:"authentication"`
	Tools           []CardTool     `json:"tools"`
	WebsiteURL      string         `json:"websiteUrl,omitempty"`
	Meta            map[string]any `json:"_meta,omitempty"`
}

// ServerInfo is the MCP initialize result's serverInfo.
type ServerInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// Transport is where and how to connect.
type Transport struct {
	Type     string `json:"type"`
	Endpoint string `json:"endpoint"`
}

// Remote is a server.json remote.
type Remote struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// CardTool is a tool the server offers.
type CardTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// nodeTools are the tools of /mcp besides the local agents' own.
var nodeTools = []CardTool{
	{Name: "search_agents", Description: "Search the catalogue of AI agents on the planet."},
	{Name: "get_agent", Description: "Get one agent's listing by id."},
	{Name: "list_tags", Description: "List the tags of agents on the network, with counts."},
	{Name: "send_message", Description: "Send a message to any agent on the network and get its reply."},
}

func (h *Handler) card(origin string) ServerCard {
	name := "io.agentsite/" + h.PeerID
	return ServerCard{
		Schema:          ServerCardSchema,
		Name:            name,
		Title:           "AgentSite node",
		Description:     "The MCP server of an AgentSite node: search the planet's agents and talk to any of them.",
		Version:         cmpOr(h.Version, "0.0.0"),
		ServerInfo:      ServerInfo{Name: "agentsite", Title: "AgentSite", Version: cmpOr(h.Version, "0.0.0")},
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		Transport:       Transport{Type: "streamable-http", Endpoint: ard.MCPURL(origin)},
		Remotes:         []Remote{{Type: "streamable-http", URL: ard.MCPURL(origin)}},
		Capabilities:    map[string]any{"tools": map[string]any{"listChanged": true}, "resources": map[string]any{"subscribe": true}, "prompts": map[string]any{}, "completions": map[string]any{}},
		Authentication:  map[string]any{"required": false},
		Tools:           append([]CardTool(nil), nodeTools...),
		WebsiteURL:      origin + "/",
		Meta:            map[string]any{"io.agentsite/node": map[string]any{"peer_id": h.PeerID, "ai_catalog": origin + CatalogPath}},
	}
}

// NodeServerCard is GET /mcp/server-card and /.well-known/mcp/server-card.json.
func (h *Handler) NodeServerCard(w http.ResponseWriter, r *http.Request) {
	origin := httpkit.Origin(r, h.PublicURL)
	doc, err := h.cached("card\x00"+origin, func() ([]byte, error) { return encode(h.card(origin)) })
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	serveCached(w, r, ServerCardMediaType, doc)
}

// AgentServerCard is GET /mcp/agents/{id}/server-card: a local agent as
// an MCP server, its tool on the node's /mcp. Other nodes' agents are
// served by their hosts.
func (h *Handler) AgentServerCard(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	l, err := h.Catalog.GetAgent(r.Context(), id)
	switch {
	case !agent.ValidID(id) || errors.Is(err, store.ErrNotFound) || (err == nil && l.Record.Tombstone):
		httpkit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "no such agent on this node"})
		return
	case err != nil:
		h.Fail(w, r, err)
		return
	case !l.Local:
		httpkit.WriteJSON(w, http.StatusNotFound, map[string]string{"error": "this agent is hosted by another node (" + l.HostPeerID + "); ask its host"})
		return
	}
	origin := httpkit.Origin(r, h.PublicURL)
	rec := l.Record
	c := h.card(origin)
	// One slash, as the schema's name pattern wants: the publisher is part
	// of the namespace.
	c.Name = "io.agentsite." + rec.Publisher + "/" + rec.Name
	c.Title = firstChars(cmpOr(rec.DisplayName, rec.Name), maxCardText)
	c.Description = cmpOr(firstChars(strings.Join(strings.Fields(rec.Description), " "), maxCardText), noDescription)
	c.Version = cmpOr(rec.Version, "0.0.0")
	c.ServerInfo = ServerInfo{Name: rec.Name, Title: c.Title, Version: c.Version}
	tool := mcpserver.AgentToolName(rec.Name)
	c.Tools = []CardTool{{Name: tool, Description: "Send a message to the agent " + rec.Name + " and get its reply."},
		{Name: "send_message", Description: "Send a message to any agent by id (this one: " + rec.ID + ")."}}
	c.WebsiteURL = origin + "/agents/" + rec.ID
	c.Meta = map[string]any{"io.agentsite/agent": map[string]any{
		"id": rec.ID, "tool": tool, "a2a_card": ard.AgentCardURL(origin, rec.ID),
		"identifier": ard.URNIn(rec.Publisher, ard.NamespaceMCP, rec.Name)}}
	body, err := encode(c)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	serveCached(w, r, ServerCardMediaType, builtDoc{body: body, etag: etagOf(body)})
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// firstChars is s cut to n characters (runes).
func firstChars(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j])
		}
		i++
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
