package handlertest

import (
	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// WeatherInput is a registration with every field filled in (skills,
// version, a multi-line description), for tests that read them all back.
func WeatherInput(name string) registry.Input {
	return registry.Input{
		Name:        name,
		DisplayName: "Weather Bot",
		Description: "Forecasts for any city.\nUses open data.",
		Tags:        []string{"weather", "forecast"},
		Skills:      []agent.Skill{{ID: "forecast", Name: "Forecast", Description: "Three-day forecast", Examples: []string{"Paris tomorrow?"}}},
		Version:     "1.2.0",
		Backend:     agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
}

// ChatMessages are the rendered messages of a chat page: role and text.
func ChatMessages(doc *goquery.Document) [][2]string {
	var out [][2]string
	Testid(doc, "message").Each(func(_ int, s *goquery.Selection) {
		out = append(out, [2]string{s.AttrOr("data-role", ""), s.Find(".msg-text").Text()})
	})
	return out
}
