package a2a

import (
	"net/http"
	"strconv"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// Protocol versions spoken: the card's protocolVersion (A2A 0.3) and the
// version in 1.0's supportedInterfaces, which is Major.Minor.
const (
	ProtocolVersion  = "0.3.0"
	InterfaceVersion = "0.3"
)

// Card is an A2A 0.3 agent card with A2A 1.0's supportedInterfaces, so
// clients of either version find the JSON-RPC endpoint: 0.3 clients read
// url and preferredTransport, 1.0 clients the interface list.
type Card struct {
	a2a.AgentCard
	SupportedInterfaces []Interface `json:"supportedInterfaces"`
}

// Interface is one entry of A2A 1.0's supportedInterfaces.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// textModes: every agent here reads and writes plain text.
var textModes = []string{"text/plain"}

// card is the part every card shares: the JSON-RPC endpoint at url.
func card(url string) Card {
	return Card{
		AgentCard: a2a.AgentCard{
			ProtocolVersion:    ProtocolVersion,
			URL:                url,
			PreferredTransport: a2a.TransportProtocolJSONRPC,
			Capabilities:       a2a.AgentCapabilities{Streaming: true},
			DefaultInputModes:  textModes,
			DefaultOutputModes: textModes,
		},
		SupportedInterfaces: []Interface{{URL: url, ProtocolBinding: string(a2a.TransportProtocolJSONRPC), ProtocolVersion: InterfaceVersion}},
	}
}

// AgentCard is GET /a2a/{id}/agent-card.json: the card of any agent on the
// planet, hosted here or elsewhere; its url is this node's endpoint for it.
func (s *Server) AgentCard(w http.ResponseWriter, r *http.Request) {
	l, err := s.Chat.Agent(r.Context(), chi.URLParam(r, "id"))
	if err != nil {
		e := httpkit.Classify(err)
		s.logFailure(r.Context(), "A2A card failed", e, err)
		httpkit.WriteJSONError(w, e)
		return
	}
	writeCard(w, agentCard(l, s.base(r)))
}

func agentCard(l store.Listing, base string) Card {
	rec := l.Record
	c := card(base + "/a2a/" + rec.ID)
	c.Name = rec.DisplayName
	c.Description = rec.Description
	c.Version = rec.Version
	if c.Version == "" {
		c.Version = strconv.FormatUint(rec.Seq, 10) // the record's revision
	}
	c.DocumentationURL = base + "/agents/" + rec.ID
	c.Provider = &a2a.AgentProvider{Org: "AgentSite node " + shortID(l.HostPeerID), URL: base}
	tags := rec.Tags
	if tags == nil {
		tags = []string{}
	}
	for _, sk := range rec.Skills {
		desc := sk.Description
		if desc == "" {
			desc = rec.Description
		}
		c.Skills = append(c.Skills, a2a.AgentSkill{ID: sk.ID, Name: sk.Name, Description: desc, Examples: sk.Examples, Tags: tags})
	}
	if len(c.Skills) == 0 { // the agent as its own one skill
		c.Skills = []a2a.AgentSkill{{ID: rec.Name, Name: rec.DisplayName, Description: rec.Description, Tags: tags}}
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

// NodeCard is GET /.well-known/agent-card.json: the node as one A2A agent,
// the concierge at /a2a.
func (s *Server) NodeCard(w http.ResponseWriter, r *http.Request) {
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
	writeCard(w, c)
}

// writeCard answers a card: a public discovery document any page may read.
func writeCard(w http.ResponseWriter, c Card) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	httpkit.WriteJSON(w, http.StatusOK, c)
}
