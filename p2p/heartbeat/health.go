package heartbeat

import (
	"fmt"
	"math"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// HealthSource returns the health of the agents this node hosts, by agent
// id: the summaries of the node's own probes and turns (docs/architecture.md "Agent
// health"). The heartbeat calls it every interval, so it must be quick
// (a snapshot, not a probe). Entries for agents the node does not host are
// left out of the heartbeat: a node speaks only for its own.
type HealthSource func() map[string]agent.Health

// healthSource is where this interval's heartbeat takes the hosted agents'
// health from (Config.Health, set at New).
func (s *Service) healthSource() HealthSource { return s.cfg.Health }

// normalizeHealth brings a summary within the heartbeat's bounds and cuts
// what no reader needs: the success rate to three decimals, times to the
// second. That keeps an entry under ~270 bytes (agent.MaxHeartbeatHealth),
// and every mirror stores exactly what the host does.
func normalizeHealth(h agent.Health) (agent.Health, bool) {
	if !agent.IsHealthState(h.State) {
		return h, false
	}
	h.LatencyMS = min(max(h.LatencyMS, 0), agent.MaxHealthLatencyMS)
	if math.IsNaN(h.SuccessRate) {
		h.SuccessRate = 0
	}
	h.SuccessRate = math.Round(min(max(h.SuccessRate, 0), 1)*1000) / 1000
	h.Uses7d = min(max(h.Uses7d, 0), agent.MaxUses7d)
	h.LastOKAt = wholeSecond(h.LastOKAt)
	h.CheckedAt = wholeSecond(h.CheckedAt)
	return h, true
}

func wholeSecond(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Second)
}

// healthByID is the entries as the store takes them.
func healthByID(entries []agent.HostedHealth) map[string]agent.Health {
	out := make(map[string]agent.Health, len(entries))
	for _, e := range entries {
		out[e.ID] = e.Health
	}
	return out
}

// checkHealth checks a heartbeat's health entries as strictly as a record:
// shapes and bounds (agent.ErrInvalidField), and that every agent is the
// sender's own (agent.ErrKeyMismatch): its id must be derived from the
// sender's key and the entry's name, as the id of every agent the sender
// can publish, and so host, is (checkHost). The check needs nothing but
// the message, so every node decides alike.
func checkHealth(entries []agent.HostedHealth, author peer.ID, now time.Time) error {
	if len(entries) == 0 {
		return nil
	}
	if len(entries) > agent.MaxHeartbeatHealth {
		return fmt.Errorf("%w: %d health entries, limit %d", agent.ErrInvalidField, len(entries), agent.MaxHeartbeatHealth)
	}
	pub, err := author.ExtractPublicKey()
	if err != nil {
		return fmt.Errorf("%w: the sender's peer id carries no key, so it hosts no agents: %v", agent.ErrKeyMismatch, err)
	}
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		if !agent.ValidID(e.ID) || !agent.IsSlug(e.Name, agent.MinNameLen, agent.MaxNameLen) {
			return fmt.Errorf("%w: health[%d]: bad agent id or name", agent.ErrInvalidField, i)
		}
		if seen[e.ID] {
			return fmt.Errorf("%w: health[%d]: agent %s appears twice", agent.ErrInvalidField, i, e.ID)
		}
		seen[e.ID] = true
		id, err := agent.DeriveID(pub, e.Name)
		if err != nil || id != e.ID {
			return fmt.Errorf("%w: health[%d]: agent %s is not hosted by %s", agent.ErrKeyMismatch, i, e.ID, author)
		}
		if err := checkHealthValues(e.Health, now); err != nil {
			return fmt.Errorf("%w: health[%d]: %s", agent.ErrInvalidField, i, err)
		}
	}
	return nil
}

// checkHealthValues says what is out of bounds in one summary, if anything.
func checkHealthValues(h agent.Health, now time.Time) error {
	latest := now.Add(agent.ClockSkew)
	switch {
	case !agent.IsHealthState(h.State):
		return fmt.Errorf("unknown state %q", h.State)
	case h.LatencyMS < 0 || h.LatencyMS > agent.MaxHealthLatencyMS:
		return fmt.Errorf("latency_ms %d out of 0..%d", h.LatencyMS, agent.MaxHealthLatencyMS)
	case h.Uses7d < 0 || h.Uses7d > agent.MaxUses7d:
		return fmt.Errorf("uses_7d %d out of 0..%d", h.Uses7d, agent.MaxUses7d)
	case !(h.SuccessRate >= 0 && h.SuccessRate <= 1):
		return fmt.Errorf("success_rate %v out of 0..1", h.SuccessRate)
	case h.LastOKAt.After(latest) || h.CheckedAt.After(latest):
		return fmt.Errorf("a time in the future")
	}
	return nil
}
