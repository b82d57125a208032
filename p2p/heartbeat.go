package p2p

import (
	"context"
	"encoding/json"
	"runtime"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// heartbeatLoop announces this node on the status topic every interval, so
// others keep its listings online and its row in their nodes table fresh.
func (n *Node) heartbeatLoop(ctx context.Context) {
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		n.sendHeartbeat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (n *Node) sendHeartbeat(ctx context.Context) {
	hosted, err := n.cfg.Cache.LocalCount(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.logger.Warn("counting local agents for the heartbeat failed", "err", err)
		}
		return
	}
	addrs := n.Addrs()
	if len(addrs) > maxHeartbeatAddrs {
		addrs = addrs[:maxHeartbeatAddrs]
	}
	hb := agent.Heartbeat{
		PeerID:       n.PeerID(),
		Version:      n.cfg.Version,
		Addrs:        addrs,
		AgentsHosted: hosted,
		Load:         float64(runtime.NumGoroutine()) / float64(100*runtime.NumCPU()),
		SentAt:       n.now().UTC(),
	}
	b, err := json.Marshal(hb)
	if err != nil {
		return
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := n.status.Publish(pctx, b); err != nil && ctx.Err() == nil {
		n.logger.Debug("publishing heartbeat failed", "err", err)
	}
}
