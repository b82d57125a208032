package a2a_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers"
	srv "github.com/agentsite/agentsite/handlers/a2a"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

func TestAgentCardFields(t *testing.T) {
	e, _ := newEnv(t, nil)
	in := SimpleInput("card-bot", "Card Bot", "weather", "demo")
	in.Skills = []agent.Skill{{ID: "forecast", Name: "Forecast", Examples: []string{"Paris tomorrow?"}}}
	id := e.SeedAgent("", in).Record.ID

	resp := e.Do(http.MethodGet, "/a2a/"+id+"/agent-card.json", nil)
	WantStatus(t, resp, http.StatusOK)
	if resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Error("the card is not readable cross-origin")
	}
	c := Decode[srv.Card](t, resp)
	url := e.TS.URL + "/a2a/" + id
	if c.ProtocolVersion != "0.3.0" || c.Name != "Card Bot" || c.Description != "Agent Card Bot" || c.URL != url ||
		c.PreferredTransport != "JSONRPC" || !c.Capabilities.Streaming || c.Version == "" {
		t.Errorf("card = %+v", c.AgentCard)
	}
	if len(c.DefaultInputModes) != 1 || c.DefaultInputModes[0] != "text/plain" || len(c.DefaultOutputModes) != 1 || c.DefaultOutputModes[0] != "text/plain" {
		t.Errorf("modes = %v / %v", c.DefaultInputModes, c.DefaultOutputModes)
	}
	if c.Provider == nil || c.Provider.Org == "" || c.Provider.URL != e.TS.URL {
		t.Errorf("provider = %+v", c.Provider)
	}
	if len(c.Skills) != 1 {
		t.Fatalf("skills = %+v", c.Skills)
	}
	if sk := c.Skills[0]; sk.ID != "forecast" || sk.Name != "Forecast" || sk.Description != "Agent Card Bot" ||
		sk.Examples[0] != "Paris tomorrow?" || strings.Join(sk.Tags, ",") != "weather,demo" {
		t.Errorf("skill = %+v", sk)
	}
	if len(c.SupportedInterfaces) != 3 || c.SupportedInterfaces[0] != (srv.Interface{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"}) ||
		c.SupportedInterfaces[1] != (srv.Interface{URL: url, ProtocolBinding: "HTTP+JSON", ProtocolVersion: "1.0"}) ||
		c.SupportedInterfaces[2] != (srv.Interface{URL: url, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"}) {
		t.Errorf("supportedInterfaces = %+v", c.SupportedInterfaces)
	}

	// Without skills, the agent is its own one skill.
	plain := e.SeedEcho("plain-bot", "Plain Bot")
	c = Decode[srv.Card](t, e.Do(http.MethodGet, "/a2a/"+plain+"/agent-card.json", nil))
	if len(c.Skills) != 1 || c.Skills[0].ID != "plain-bot" || c.Skills[0].Name != "Plain Bot" {
		t.Errorf("skills = %+v", c.Skills)
	}
}

// The 1.0 field names, as the specification spells them (a2a.proto's
// AgentInterface in JSON).
func TestCardSpellsSupportedInterfaces(t *testing.T) {
	e, _ := newEnv(t, nil)
	body, _ := io.ReadAll(e.Do(http.MethodGet, "/.well-known/agent-card.json", nil).Body)
	for _, want := range []string{`"supportedInterfaces":[{"url":"` + e.TS.URL + `/a2a","protocolBinding":"JSONRPC","protocolVersion":"1.0"},` +
		`{"url":"` + e.TS.URL + `/a2a","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},` +
		`{"url":"` + e.TS.URL + `/a2a","protocolBinding":"JSONRPC","protocolVersion":"0.3"}]`,
		`"preferredTransport":"JSONRPC"`, `"protocolVersion":"0.3.0"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("card lacks %s: %s", want, body)
		}
	}
}

func TestUnknownAgentCard(t *testing.T) {
	e, _ := newEnv(t, nil)
	resp := e.Do(http.MethodGet, "/a2a/no-such-agent/agent-card.json", nil)
	WantStatus(t, resp, http.StatusNotFound)
	if got := Decode[httpkit.ErrorBody](t, resp); got.Error.Code != "unknown_agent" {
		t.Errorf("error = %+v", got)
	}
}

// The node's card is a real A2A agent (the concierge at /a2a): none of the
// old card's claims of an MCP transport or a WebSocket interface.
func TestNodeCard(t *testing.T) {
	e, _ := newEnv(t, nil)
	e.SeedEcho("some-bot", "Some Bot")
	resp := e.Do(http.MethodGet, "/.well-known/agent-card.json", nil)
	WantStatus(t, resp, http.StatusOK)
	body, _ := io.ReadAll(resp.Body)
	for _, bogus := range []string{"MCP", "/mcp", "WebSocket", "additionalInterfaces"} {
		if strings.Contains(string(body), bogus) {
			t.Errorf("node card mentions %s: %s", bogus, body)
		}
	}
	c := Decode[srv.Card](t, &http.Response{Body: io.NopCloser(strings.NewReader(string(body)))})
	if c.URL != e.TS.URL+"/a2a" || c.PreferredTransport != "JSONRPC" || c.ProtocolVersion != "0.3.0" || !c.Capabilities.Streaming || c.Version != "test" {
		t.Errorf("node card = %+v", c.AgentCard)
	}
	var skills []string
	for _, sk := range c.Skills {
		skills = append(skills, sk.ID)
	}
	if strings.Join(skills, ",") != "find_agents,forward_to_agent" {
		t.Errorf("skills = %v", skills)
	}
}

// Behind a reverse proxy, card URLs use --public-url, not the Host the
// proxy sent.
func TestCardsUsePublicURL(t *testing.T) {
	e, _ := newEnv(t, func(c *handlers.Config) { c.PublicURL = "https://agents.example.org" })
	id := e.SeedEcho("pub-bot", "Pub Bot")
	c := Decode[srv.Card](t, e.Do(http.MethodGet, "/a2a/"+id+"/agent-card.json", nil))
	if c.URL != "https://agents.example.org/a2a/"+id || c.SupportedInterfaces[0].URL != c.URL {
		t.Errorf("agent card urls = %s, %+v", c.URL, c.SupportedInterfaces)
	}
	n := Decode[srv.Card](t, e.Do(http.MethodGet, "/.well-known/agent-card.json", nil))
	if n.URL != "https://agents.example.org/a2a" {
		t.Errorf("node card url = %s", n.URL)
	}
}
