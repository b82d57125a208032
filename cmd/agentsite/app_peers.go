package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/p2p/peermcp"
	"github.com/agentsite/agentsite/store"
)

// servePeers answers other nodes' turns for the agents this node hosts,
// through the runtime, over MCP on libp2p (HTTP, and the lines protocol
// for nodes that speak it); they count for health too.
// The lines protocol and HTTP share one budget of turns per peer.
func (a *app) servePeers() error {
	cfg := peermcp.HandlerConfig{
		Agents:   hostedAgents{st: a.network},
		Answerer: chat.Measured{Answerer: a.runtime, Outcomes: a.health},
		Detail:   runtime.PublicMessage,
		Allow:    peerTurnLimit(a.cfg.ChatRateLimit),
		Logger:   a.logger,
		Version:  buildVersion(),
	}
	if err := a.node.ServeMCP(peermcp.NewHandler(cfg)); err != nil {
		return fmt.Errorf("serve MCP over libp2p: %w", err)
	}
	a.node.ServeMCPLines(peermcp.NewLinesHandler(cfg).ServeStream)
	return nil
}

// hostedAgents is peermcp.Agents on the store: the agents this node hosts
// and has not deleted.
type hostedAgents struct{ st store.Catalogue }

// HostedAgent implements peermcp.Agents.
func (h hostedAgents) HostedAgent(ctx context.Context, id string) (agent.Record, error) {
	l, err := h.st.GetAgent(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && (!l.Local || l.Record.Tombstone)):
		return agent.Record{}, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, id)
	case err != nil:
		return agent.Record{}, err
	}
	return l.Record, nil
}

// peerTurnLimit is the budget of turns each other node may send this one,
// keyed by the calling peer. A portal forwards many people's turns, so a
// peer's budget is 100 people's chat rate: a safety valve against one
// misbehaving node, not a quota.
func peerTurnLimit(chatRate int) func(caller string) bool {
	rates := httpkit.NewRates(100 * chatRate)
	return func(caller string) bool { return rates.Allow(caller, time.Now()) }
}
