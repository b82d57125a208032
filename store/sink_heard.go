package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// HeartbeatTx is a batch's Tx that also takes a heartbeat's writes
// (Sink.HeardAll): both engines' batches have it.
type HeartbeatTx interface {
	UpsertNode(ctx context.Context, n Node) error
	SetHostStatus(ctx context.Context, hostPeerID, status string, lastSeen time.Time) (int, error)
	SetHealth(ctx context.Context, hostPeerID string, health map[string]agent.Health) (int, error)
}

// errNoHeartbeatTx: the engine's batch does not take heartbeats.
var errNoHeartbeatTx = errors.New("store: this engine's batch does not take heartbeat writes")

// HeardAll records heartbeats as NodeSeen, and health[i] (when any) as
// SetHealth, would one after the other, in order (p2p batches what it
// receives in a short window, docs/architecture.md "Idle cost"): a
// heartbeat that says nothing new writes nothing, and the writes of the
// others (a node row, its listings online, its agents' health) go into
// one transaction, each undone alone if it fails. errs[i] is beats[i]'s
// outcome. Without a Batcher each goes on its own.
func (s *Sink) HeardAll(ctx context.Context, beats []agent.Heartbeat, health []map[string]agent.Health) []error {
	errs := make([]error, len(beats))
	healthOf := func(i int) map[string]agent.Health {
		if i < len(health) {
			return health[i]
		}
		return nil
	}
	one := func(i int) {
		if err := s.NodeSeen(ctx, beats[i]); err != nil {
			errs[i] = err
		}
		if h := healthOf(i); len(h) > 0 {
			if err := s.SetHealth(ctx, beats[i].PeerID, h); err != nil {
				errs[i] = err
			}
		}
	}
	b, ok := s.batcher()
	if !ok {
		for i := range beats {
			one(i)
		}
		return errs
	}
	t := s.now()
	type nodeWrite struct {
		i int
		n Node
	}
	var (
		nodes   []nodeWrite
		healthy []int // the beats with health to write
	)
	for i := range beats {
		if !s.heard.fresh(&beats[i], t) {
			n, err := s.nodeRow(ctx, &beats[i], t)
			if err != nil {
				errs[i] = err
			} else {
				nodes = append(nodes, nodeWrite{i, n})
			}
		}
		if len(healthOf(i)) > 0 {
			healthy = append(healthy, i)
		}
	}
	if len(nodes) == 0 && len(healthy) == 0 {
		return errs
	}
	err := b.InBatch(ctx, func(ctx context.Context, tx Tx) error {
		htx, ok := tx.(HeartbeatTx)
		if !ok {
			return errNoHeartbeatTx
		}
		for _, w := range nodes {
			hb := &beats[w.i]
			if err := htx.UpsertNode(ctx, w.n); err != nil {
				errs[w.i] = fmt.Errorf("upsert node: %w", err)
				continue
			}
			// Online in memory before the listings are, as NodeSeen.
			s.heard.wrote(hb, w.n, t)
			if _, err := htx.SetHostStatus(ctx, hb.PeerID, StatusOnline, t); err != nil {
				s.heard.silenced(hb.PeerID)
				errs[w.i] = fmt.Errorf("mark listings online: %w", err)
			}
		}
		for _, i := range healthy {
			if _, err := htx.SetHealth(ctx, beats[i].PeerID, healthOf(i)); err != nil {
				errs[i] = fmt.Errorf("set health of agents of %s: %w", beats[i].PeerID, err)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, errNoHeartbeatTx):
		for _, w := range nodes {
			errs[w.i] = nil
		}
		for i := range beats {
			one(i)
		}
	case err != nil:
		// Nothing of the transaction was kept: the rows written in memory
		// are not, so each of those nodes' next heartbeat writes again.
		for _, w := range nodes {
			s.heard.silenced(beats[w.i].PeerID)
			errs[w.i] = fmt.Errorf("record heartbeats: %w", err)
		}
		for _, i := range healthy {
			errs[i] = fmt.Errorf("record heartbeats: %w", err)
		}
	}
	return errs
}

// nodeRow is the nodes row a heartbeat that changes it makes (NodeSeen):
// a heartbeat without addresses keeps the stored ones, and agents_hosted
// is the claim capped at the host's listings held here.
func (s *Sink) nodeRow(ctx context.Context, hb *agent.Heartbeat, t time.Time) (Node, error) {
	addrs := hb.Addrs
	if addrs == nil {
		if addrs = s.heard.addrs(hb.PeerID); addrs == nil {
			stored, err := s.Store.GetNodes(ctx, []string{hb.PeerID})
			if err != nil {
				return Node{}, fmt.Errorf("look up node %s: %w", hb.PeerID, err)
			}
			if len(stored) == 1 {
				addrs = stored[0].Addrs
			}
		}
	}
	hosted, err := s.Store.CountHosted(ctx, hb.PeerID, hb.AgentsHosted)
	if err != nil {
		return Node{}, fmt.Errorf("count listings of %s: %w", hb.PeerID, err)
	}
	return Node{
		PeerID:        hb.PeerID,
		Name:          hb.Name,
		Addrs:         addrs,
		Version:       hb.Version,
		AgentsHosted:  hosted,
		Load:          hb.Load,
		LastHeartbeat: t,
		Status:        StatusOnline,
	}, nil
}
