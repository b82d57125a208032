package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
)

// demoAgents are the builtin agents a fresh node hosts, so `make run` shows
// a working portal with something to browse and chat with.
var demoAgents = []registry.Input{
	{
		Name:        "echo",
		DisplayName: "Echo",
		Description: "Replies with exactly what you send. Useful to test that a node, the network and chat work end to end.",
		Tags:        []string{"demo", "utility", "testing"},
		Skills: []agent.Skill{{
			ID: "echo", Name: "Echo", Description: "Repeats the message back.",
			Examples: []string{"hello planet"},
		}},
		Version: "1.0.0",
		Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	},
	{
		Name:        "calculator",
		DisplayName: "Calculator",
		Description: "Evaluates arithmetic safely: + - * / % ^, parentheses and decimals. No code is executed.",
		Tags:        []string{"demo", "math", "utility"},
		Skills: []agent.Skill{{
			ID: "arithmetic", Name: "Arithmetic", Description: "Evaluates an arithmetic expression.",
			Examples: []string{"2 * (3 + 4)", "1.5 ^ 2 / 3"},
		}},
		Version: "1.0.0",
		Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "calculator"},
	},
}

// publishDemoAgents registers the demo agents as the operator's, or
// re-signs them; a user's agent with one's name keeps it.
func publishDemoAgents(ctx context.Context, reg *registry.Registry, logger *slog.Logger) error {
	for _, in := range demoAgents {
		_, err := reg.EnsureOperatorAgent(ctx, in)
		switch {
		case errors.Is(err, registry.ErrNameTaken):
			logger.Warn("demo agent skipped: a user's agent has its name", "name", in.Name, "err", err)
		case err != nil:
			return err
		}
	}
	return nil
}
