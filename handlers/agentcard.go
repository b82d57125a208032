package handlers

import (
	"net/http"

	"github.com/agentsite/agentsite/handlers/httpkit"
)

// agentCard is the node's A2A agent card (/.well-known/agent-card.json):
// the node presented as one agent whose skills are the agents it hosts, so
// A2A clients can discover what this AgentSite offers.
type agentCard struct {
	ProtocolVersion    string          `json:"protocolVersion"`
	Name               string          `json:"name"`
	Description        string          `json:"description"`
	URL                string          `json:"url"`
	PreferredTransport string          `json:"preferredTransport"`
	Version            string          `json:"version"`
	Capabilities       cardCapability  `json:"capabilities"`
	DefaultInputModes  []string        `json:"defaultInputModes"`
	DefaultOutputModes []string        `json:"defaultOutputModes"`
	Skills             []cardSkill     `json:"skills"`
	Provider           *cardProvider   `json:"provider,omitempty"`
	AdditionalIfaces   []cardInterface `json:"additionalInterfaces,omitempty"`
}

type cardCapability struct {
	Streaming bool `json:"streaming"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Examples    []string `json:"examples,omitempty"`
}

type cardProvider struct {
	Organization string `json:"organization"`
	URL          string `json:"url"`
}

type cardInterface struct {
	URL       string `json:"url"`
	Transport string `json:"transport"`
}

// baseURL is the portal's own origin as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) agentCard(w http.ResponseWriter, r *http.Request) {
	local, err := s.Store.ListLocal(r.Context())
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	base := baseURL(r)
	card := agentCard{
		ProtocolVersion:    "0.3.0",
		Name:               "AgentSite " + shortPeerID(s.Node.PeerID()),
		Description:        "An AgentSite node: a peer of the planet-wide network of AI agents. Each skill is an agent hosted here; send_message on the MCP endpoint reaches any agent on the network.",
		URL:                base + "/mcp",
		PreferredTransport: "MCP",
		Version:            s.Config.Version,
		Capabilities:       cardCapability{Streaming: true},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             make([]cardSkill, 0, len(local)),
		AdditionalIfaces:   []cardInterface{{URL: base + "/api/v1/chat", Transport: "WebSocket"}},
	}
	for _, l := range local {
		rec := l.Record
		if rec.Tombstone {
			continue
		}
		var examples []string
		for _, sk := range rec.Skills {
			examples = append(examples, sk.Examples...)
		}
		tags := rec.Tags
		if tags == nil {
			tags = []string{}
		}
		card.Skills = append(card.Skills, cardSkill{
			ID: rec.ID, Name: rec.DisplayName, Description: rec.Description, Tags: tags, Examples: examples,
		})
	}
	w.Header().Set("Access-Control-Allow-Origin", "*") // public discovery document
	httpkit.WriteJSON(w, http.StatusOK, card)
}

// shortPeerID is the tail of a peer ID, enough to tell nodes apart.
func shortPeerID(id string) string {
	if len(id) > 8 {
		return id[len(id)-8:]
	}
	return id
}
