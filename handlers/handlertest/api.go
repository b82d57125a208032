package handlertest

import (
	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// WeatherInput is a full registration (skills, tags, a multi-line
// description) with the echo builtin.
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

// Bearer is the header pair of Env.Do that sends token.
func Bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }
