package a2a

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/cardsig"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Protocol versions spoken: the card's protocolVersion (A2A 0.3) and the
// versions in 1.0's supportedInterfaces, which are Major.Minor.
const (
	ProtocolVersion  = "0.3.0"
	InterfaceVersion = "0.3"
	V1Version        = "1.0"
	// BindingREST is A2A 1.0's HTTP+JSON binding.
	BindingREST = "HTTP+JSON"
)

// Card is an A2A 0.3 agent card with A2A 1.0's members too, so clients of
// either version read it: 0.3 clients read url and preferredTransport,
// 1.0 clients supportedInterfaces, whose order is the node's preference
// (1.0 JSON-RPC, 1.0 HTTP+JSON, then 0.3 JSON-RPC, all at the one url).
// Where the two versions spell a member differently (capabilities,
// securitySchemes), the member carries both spellings.
type Card struct {
	a2a.AgentCard
	SupportedInterfaces []Interface `json:"supportedInterfaces"`
	// Capabilities shadows 0.3's: 1.0 adds extendedAgentCard.
	Capabilities Capabilities `json:"capabilities"`
	// SecuritySchemes shadows 0.3's: each scheme in 0.3's OpenAPI shape
	// ("type") and in 1.0's (httpAuthSecurityScheme).
	SecuritySchemes map[string]any `json:"securitySchemes,omitempty"`
}

// Capabilities is what every agent here can do, in 0.3 and 1.0 terms.
type Capabilities struct {
	Streaming         bool `json:"streaming"`
	PushNotifications bool `json:"pushNotifications"`
	ExtendedAgentCard bool `json:"extendedAgentCard"`
	// Extensions: on the card of an agent hosted on another node, its
	// host's signed record (cardsig.HostRecordExtension).
	Extensions []map[string]any `json:"extensions,omitempty"`
}

// Interface is one entry of A2A 1.0's supportedInterfaces.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// textModes: every agent here reads and writes plain text.
var textModes = cardsig.NodeTextModes

// bearerScheme says what the node accepts (cardsig.NodeSecuritySchemes):
// anonymous callers, or a bearer token (the operator token, or a portal
// account's API token), which makes the caller's tasks its own and opens
// the extended card. No scheme is required, so the card lists no
// security requirement.
var bearerScheme = cardsig.NodeSecuritySchemes(false)

// card is the part every card shares: the endpoints at url.
func card(url string) Card {
	return Card{
		AgentCard: a2a.AgentCard{
			ProtocolVersion:                   ProtocolVersion,
			URL:                               url,
			PreferredTransport:                a2a.TransportProtocolJSONRPC,
			DefaultInputModes:                 textModes,
			DefaultOutputModes:                textModes,
			SupportsAuthenticatedExtendedCard: true,
		},
		Capabilities:    Capabilities{Streaming: true, PushNotifications: true, ExtendedAgentCard: true},
		SecuritySchemes: bearerScheme,
		SupportedInterfaces: []Interface{
			{URL: url, ProtocolBinding: string(a2a.TransportProtocolJSONRPC), ProtocolVersion: V1Version},
			{URL: url, ProtocolBinding: BindingREST, ProtocolVersion: V1Version},
			{URL: url, ProtocolBinding: string(a2a.TransportProtocolJSONRPC), ProtocolVersion: InterfaceVersion},
		},
	}
}

// mySkill is on extended cards only: what an authenticated caller has
// (cardsig.CallerTasksSkill, the one skill a card may add to its host's).
var mySkill = a2a.AgentSkill{ID: cardsig.CallerTasksSkill.ID, Name: cardsig.CallerTasksSkill.Name,
	Description: cardsig.CallerTasksSkill.Description, Tags: cardsig.CallerTasksSkill.Tags}

// agentCardFor is the card of any agent on the planet, hosted here or
// elsewhere (GET /a2a/{id}/agent-card.json, or GET on the card's url
// /a2a/{id}); its url is this node's endpoint for it, and this node signs
// it (an agent hosted elsewhere carries its host's signed record too).
// When there is none it answers and returns false.
//
// modified is when the listing last changed here (the store's time of
// its row), for Last-Modified.
func (s *Server) agentCardFor(w http.ResponseWriter, r *http.Request, id string) (c Card, modified time.Time, ok bool) {
	l, err := s.Chat.Agent(r.Context(), id)
	if err != nil {
		e := httpkit.Classify(err)
		s.logFailure(r.Context(), "A2A card failed", e, err)
		httpkit.WriteJSONError(w, e)
		return Card{}, time.Time{}, false
	}
	modified = l.UpdatedAt
	if modified.IsZero() {
		modified = l.Record.IssuedAt
	}
	return agentCard(l, s.base(r)), modified, true
}

func agentCard(l store.Listing, base string) Card {
	rec := l.Record
	c := card(base + "/a2a/" + rec.ID)
	c.Name = rec.DisplayName
	c.Description = rec.Description
	c.Version = cardsig.HostVersion(&rec) // the record's, else its revision
	c.DocumentationURL = base + "/agents/" + rec.ID
	c.Provider = &a2a.AgentProvider{Org: cardsig.HostProvider(l.HostPeerID), URL: base}
	// The card says of the agent what its record says, no more: a card
	// of an agent hosted elsewhere is held to it (cardsig.VerifyHostRecord).
	for _, sk := range cardsig.HostSkills(&rec) {
		c.Skills = append(c.Skills, a2a.AgentSkill{ID: sk.ID, Name: sk.Name, Description: sk.Description, Examples: sk.Examples, Tags: sk.Tags})
	}
	if !l.Local && len(l.Envelope) > 0 {
		// This node's signature binds its own url; the host's signature
		// over its url cannot be carried, but its signed record can: a
		// client checks the host's own claims with it.
		c.Capabilities.Extensions = []map[string]any{cardsig.HostRecordExtension(rec.Publisher, l.Envelope)}
	}
	return c
}

// Skills of the node's concierge.
var conciergeSkills = []a2a.AgentSkill{
	{
		ID:   "find_agents",
		Name: "Find agents",
		Description: "Answers with up to 5 agents of the planet that match the message's words: " +
			"name, id, status and the URL of each one's A2A card.",
		Tags:     []string{"directory", "search"},
		Examples: []string{"weather", "translate to French"},
	},
	{
		ID:   "forward_to_agent",
		Name: "Forward to an agent",
		Description: `With message metadata {"agent_id": "<id>"}, sends the message to that agent, wherever ` +
			"it is hosted, and answers with its reply as a task; the contextId continues the conversation.",
		Tags: []string{"chat", "relay"},
	},
}

// NodeCard is GET /.well-known/agent-card.json (and GET /a2a, the card's
// url): the node as one A2A agent, the concierge at /a2a.
func (s *Server) NodeCard(w http.ResponseWriter, r *http.Request) {
	s.writeCard(w, r, s.nodeCard(r), s.started)
}

func (s *Server) nodeCard(r *http.Request) Card {
	base := s.base(r)
	c := card(base + "/a2a")
	c.Name = "AgentSite " + shortID(s.Config.NodeID)
	c.Description = "The concierge of an AgentSite node, one peer of a planet-wide network of AI agents. " +
		"Tell it what you need and it answers with the agents that match, each an A2A agent with its own card; " +
		`or name an agent in the message metadata ("agent_id") and it forwards the message to that agent.`
	c.Version = s.Config.Version
	c.DocumentationURL = base + "/agents"
	c.Provider = &a2a.AgentProvider{Org: "AgentSite node " + shortID(s.Config.NodeID), URL: base}
	c.Skills = conciergeSkills
	return c
}

// LegacyCard is GET /.well-known/agent.json, where older clients look: a
// redirect to the card.
func (s *Server) LegacyCard(w http.ResponseWriter, r *http.Request) {
	httpkit.AllowAnyOrigin(w.Header())
	http.Redirect(w, r, "/.well-known/agent-card.json", http.StatusMovedPermanently)
}

// signed is c as JSON, signed by this node when it has a key; only1 drops
// the 0.3 members, for a caller that said it speaks 1.0 (1.0's schema
// allows no others).
func (s *Server) signed(c Card, only1 bool) ([]byte, error) {
	body, err := json.Marshal(c)
	if err == nil && only1 {
		body, err = v1Only(body)
	}
	if err != nil || s.CardKey == nil {
		return body, err
	}
	return cardsig.Sign(body, s.CardKey, s.Config.NodeID)
}

// v1Only is a card without its 0.3 members, securitySchemes in 1.0's
// shape alone.
func v1Only(body []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, err
	}
	for _, k := range []string{"url", "preferredTransport", "protocolVersion", "supportsAuthenticatedExtendedCard", "additionalInterfaces"} {
		delete(m, k)
	}
	if m["securitySchemes"] != nil {
		m["securitySchemes"] = cardsig.NodeSecuritySchemes(true)
	}
	return json.Marshal(m)
}

// wants1 says the caller speaks A2A 1.0 (its A2A-Version header).
func wants1(r *http.Request) bool {
	v := strings.TrimSpace(r.Header.Get(versionHeader))
	return v == "1" || strings.HasPrefix(v, "1.")
}

// cardMaxAge is how long a client may keep a card: a minute, as an
// agent's record can change; the ETag and Last-Modified make checking
// again cheap.
const cardMaxAge = "public, max-age=60"

// writeCard answers a card: a public discovery document any page may
// read (CORS, no credentials), signed, with an ETag and Last-Modified
// (modified: when what it says last changed) for conditional GETs (304
// when unchanged).
func (s *Server) writeCard(w http.ResponseWriter, r *http.Request, c Card, modified time.Time) {
	body, err := s.signed(c, wants1(r))
	if err != nil {
		s.Logger.WarnContext(r.Context(), "A2A card signing failed", "err", err)
		httpkit.WriteJSONError(w, httpkit.ErrInternal)
		return
	}
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	httpkit.AllowAnyOrigin(h)
	h.Set("Cache-Control", cardMaxAge)
	h.Set("ETag", etag)
	h.Set("Vary", "Accept-Encoding, A2A-Version")
	if modified.IsZero() || modified.After(s.now()) {
		modified = s.now()
	}
	h.Set("Last-Modified", modified.UTC().Format(http.TimeFormat))
	// If-None-Match first (it overrides If-Modified-Since), weak compare.
	if match := r.Header.Get("If-None-Match"); match != "" {
		if etagMatches(match, etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	} else if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && !modified.Truncate(time.Second).After(ims) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagMatches reads an If-None-Match list (weak comparison).
func etagMatches(list, etag string) bool {
	for _, e := range strings.Split(list, ",") {
		e = strings.TrimPrefix(strings.TrimSpace(e), "W/")
		if e == etag || e == "*" {
			return true
		}
	}
	return false
}

// extendedCard is GetExtendedAgentCard (agent/getAuthenticatedExtendedCard):
// for an authenticated caller (a bearer token, or a portal session from
// this node's own pages), the card with what the caller may do. The
// specification wants the extended card behind authentication, so an
// anonymous caller is refused as unauthenticated (1.0: -31401, 401 over
// HTTP+JSON); the public card is at the agent's url.
func (s *Server) extendedCard(w http.ResponseWriter, r *http.Request, c *call, who caller, scope string) {
	if !who.authed {
		if c.d == dialectREST { // a 401 names the scheme to use
			w.Header().Set("WWW-Authenticate", `Bearer realm="agentsite"`)
		}
		c.fail(w, errExtendedCardAuth)
		return
	}
	var cd Card
	if scope == "" {
		cd = s.nodeCard(r)
	} else {
		l, err := s.Chat.Agent(r.Context(), scope)
		if err != nil {
			re, _ := rpcError(err)
			c.fail(w, re)
			return
		}
		cd = agentCard(l, s.base(r))
	}
	cd.Skills = append(slices.Clone(cd.Skills), mySkill)
	body, err := s.signed(cd, c.d != dialect03)
	if err != nil {
		c.fail(w, &RPCError{Code: CodeInternal, Message: httpkit.ErrInternal.Message})
		return
	}
	c.ok(w, json.RawMessage(body))
}

// errExtendedCardAuth refuses the extended card to an anonymous caller.
// The status makes it UNAUTHENTICATED in 1.0 (v1Error, restError); 0.3
// has no such code, and gets AgentSite's -32000 with data.code
// "unauthorized".
var errExtendedCardAuth = &RPCError{Code: CodeServerError, status: http.StatusUnauthorized,
	Message: "The extended card is for authenticated callers: send Authorization: Bearer <the node operator's token, " +
		"or an API token of an account on this node (/account)>. The public card is at the agent's url, " +
		"<url>/.well-known/agent-card.json.",
	Data: &ErrorData{Code: string(agent.CodeUnauthorized)}}

// AgentCard is the card of l as served on base (the node's origin), for
// the surfaces that show it beside the listing (the MCP resource
// agentsite://agents/{id}). It is unsigned: the signed card stays at its
// A2A paths.
func AgentCard(l store.Listing, base string) Card { return agentCard(l, base) }
