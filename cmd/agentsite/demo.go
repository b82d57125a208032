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

// conformanceAgent is the builtin agent the A2A conformance kit tests
// against (--conformance-agent; make a2a-tck points the kit at its url).
var conformanceAgent = registry.Input{
	Name:        "a2a-conformance",
	DisplayName: "A2A Conformance",
	Description: "Does what the A2A conformance kit asks by the id of each message: completes tasks, makes artifacts, asks for input, answers with messages. For testing A2A clients and this node.",
	Tags:        []string{"testing", "a2a"},
	Skills: []agent.Skill{{
		ID: "conformance", Name: "A2A conformance", Description: "Behaves as the A2A conformance kit's system under test.",
	}},
	Version: "1.0.0",
	Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: agent.BuiltinConformance},
}

// publishConformanceAgent registers the conformance agent as the
// operator's, or re-signs it.
func publishConformanceAgent(ctx context.Context, reg *registry.Registry) error {
	_, err := reg.EnsureOperatorAgent(ctx, conformanceAgent)
	return err
}
