package agent

// Limits of the health a heartbeat carries, part of the wire contract like
// the record limits: every node rejects a heartbeat that exceeds them.
const (
	// MaxHeartbeatHealth bounds the entries of one heartbeat message. At
	// the normalised worst case (~270 bytes an entry) 128 entries are
	// ~35 KiB, under the heartbeat size cap with room for its addresses;
	// a host of 1,000 agents sends 8 messages per interval.
	MaxHeartbeatHealth = 128
	// MaxHealthLatencyMS bounds a reported median latency: 10 minutes,
	// far above any turn timeout, so only a nonsense value is refused.
	MaxHealthLatencyMS = 600_000
)

// HostedHealth is one entry of a heartbeat's health: an agent the sender
// hosts, named by id and name, and its health. The name is there so that
// every receiver can check, without looking anything up, that the id is
// derived from the sender's key and name (DeriveID): a node can only
// speak for its own agents, and a claim about another's is refused the
// same way by every node (so an honest node that relays it is never
// blamed for a different view of the catalogue).
type HostedHealth struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Health
}

// IsHealthState reports whether s is one of the health states, for
// validating heartbeats and search filters.
func IsHealthState(s string) bool {
	switch s {
	case HealthHealthy, HealthDegraded, HealthFailing, HealthUnknown:
		return true
	}
	return false
}
