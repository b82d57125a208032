package agent

import (
	"fmt"
	"hash/fnv"
	"time"
)

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
	// MaxUses7d bounds a reported count of a week's conversations
	// (Health.Uses7d): ten million, far above what one host holds.
	MaxUses7d = 10_000_000
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

// MaxHeartbeatInterval bounds the interval a heartbeat may declare
// (Heartbeat.IntervalMS): a sender that adapts its interval to the
// planet's size stops there, so a listing's host is found silent within
// three of them (30 minutes) however large the planet.
const MaxHeartbeatInterval = 10 * time.Minute

// HealthSlice places a heartbeat's health in its sender's whole state:
// slice Index of Count, each at most MaxHeartbeatHealth entries in id
// order. Receivers that lack the state fill it from the slices, which a
// sender sends in turn (the periodic refresh).
type HealthSlice struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Interval is the interval the heartbeat declares, or 0 when it declares
// none (a heartbeat of agentsite/status/1 from an older node).
func (hb *Heartbeat) Interval() time.Duration {
	if hb.IntervalMS <= 0 {
		return 0
	}
	return min(time.Duration(hb.IntervalMS)*time.Millisecond, MaxHeartbeatInterval)
}

// HealthDigest is the order-free digest of a health state, built one
// entry at a time (Add, Remove): the XOR of each entry's FNV-1a hash, so
// a sender updates it in O(changes), not O(agents), per round.
type HealthDigest uint64

// EntryHash is one entry's share of a HealthDigest: its id and its
// normalised health, as the heartbeat carries them. Uses7d counts only
// when it is set, so an entry without it hashes as it did before the field.
func EntryHash(e HostedHealth) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%.3f\x00%d\x00%d", e.ID, e.State, e.LatencyMS, e.SuccessRate, e.LastOKAt.Unix(), e.CheckedAt.Unix())
	if e.Uses7d != 0 {
		fmt.Fprintf(h, "\x00%d", e.Uses7d)
	}
	return h.Sum64()
}

// String is the digest as a heartbeat carries it.
func (d HealthDigest) String() string { return fmt.Sprintf("%016x", uint64(d)) }
