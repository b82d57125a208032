// Package agent is the domain of AgentSite: the signed agent listing
// (Record) and its backend settings, validation and id derivation, sealing
// in libp2p envelopes, a chat Turn, and the error kinds and stable codes
// every surface maps to its wire format. It speaks no protocol itself.
package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/record"
)

// Limits of a record, from docs/architecture.md. They are part of the wire contract:
// every node rejects records that exceed them.
const (
	MaxRecordBytes      = 16 << 10 // encoded envelope
	MaxDescriptionBytes = 4 << 10
	MaxTags             = 16
	MaxSkills           = 16
	MaxEndpoints        = 8
	MinNameLen          = 3
	MaxNameLen          = 64
	MaxDisplayNameLen   = 100
	MaxTagLen           = 32
	MaxVersionLen       = 32
	MaxOwnerLen         = 64
	MaxSkillTextLen     = 512
	MaxSkillExamples    = 8
	MaxURLLen           = 2048

	// DefaultTTL is how long a record is valid after it is issued; the host
	// re-announces well before that.
	DefaultTTL = time.Hour
	// MaxTTL bounds expires_at so a publisher cannot pin a listing forever.
	MaxTTL = 7 * 24 * time.Hour
	// ClockSkew is the tolerance for issued_at in the future.
	ClockSkew = 5 * time.Minute
)

// PayloadDomain is the libp2p envelope signature domain of agent records, so a
// signature made for another record type can never be replayed as a listing.
const PayloadDomain = "agentsite-agent-record"

// PayloadCodec is the envelope payload type of agent records.
var PayloadCodec = []byte("/agentsite/agent-record/1")

// Endpoint kinds.
const (
	EndpointLibp2pMCP = "libp2p-mcp" // the hosting node's peer ID + MCP-over-libp2p protocol
	EndpointHTTPMCP   = "http-mcp"   // a public Streamable HTTP /mcp URL
	EndpointA2ACard   = "a2a-card"   // an A2A agent card URL
)

// MCPProtocol is the libp2p protocol the hosting node serves MCP on.
const MCPProtocol = "/agentsite/mcp/1.0.0"

// MCPLinesProtocol is the libp2p protocol on which a node answers
// send_message calls in MCP's stdio framing, many on one long-lived
// stream: newline-delimited JSON-RPC, without HTTP (p2p/peermcp). Older
// nodes serve MCPProtocol alone.
const MCPLinesProtocol = "/agentsite/mcp-lines/1.0.0"

// Skill is an A2A-style capability description.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Examples    []string `json:"examples,omitempty"`
}

// Endpoint says how to reach an agent.
type Endpoint struct {
	Kind     string `json:"kind"`
	PeerID   string `json:"peer_id,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	URL      string `json:"url,omitempty"`
}

// Record is the signed agent listing that travels through the network. Its
// fields are public; backend settings (and secrets) never enter it.
type Record struct {
	ID          string     `json:"id"`
	Name        string     `json:"name"`
	DisplayName string     `json:"display_name"`
	Description string     `json:"description"`
	Tags        []string   `json:"tags"`
	Skills      []Skill    `json:"skills"`
	Version     string     `json:"version"`
	Publisher   string     `json:"publisher"`
	Owner       string     `json:"owner,omitempty"`
	Endpoints   []Endpoint `json:"endpoints"`
	Seq         uint64     `json:"seq"`
	IssuedAt    time.Time  `json:"issued_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	Tombstone   bool       `json:"tombstone,omitempty"`
	// Origin, for a listing imported from another catalogue, is where it
	// came from and its identity there, which exports keep, so the listing
	// is known by the same name there and here. Older
	// nodes ignore it.
	Origin *Origin `json:"origin,omitempty"`
}

// Origin is an imported listing's identity in the catalogue it came from.
type Origin struct {
	// Registry names the catalogue: OriginMCPRegistry, or the URL of an
	// AI Catalog.
	Registry string `json:"registry"`
	// Name and Version are the upstream's own (an MCP server name such as
	// io.github.user/weather, and its version string as given).
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
	// Install is how to run a catalogue-only listing (BackendCatalogue)
	// yourself, e.g. "npx -y @scope/server@1.0.0".
	Install string `json:"install,omitempty"`
}

// OriginOf is the origin of the record in env (a stored, once verified
// envelope), or nil: stores keep a listing's fields in columns and the
// origin only in its envelope.
func OriginOf(env []byte, now time.Time) *Origin {
	if len(env) == 0 || !bytes.Contains(env, []byte(`"origin"`)) {
		return nil
	}
	rec, err := OpenIgnoringExpiry(env, now)
	if err != nil {
		return nil
	}
	return rec.Origin
}

// OriginMCPRegistry is Origin.Registry of MCP Registry imports.
const OriginMCPRegistry = "io.modelcontextprotocol.registry"

// Limits of an Origin.
const (
	MaxOriginRegistryLen = 256
	MaxOriginNameLen     = 200
	MaxOriginVersionLen  = 64
	MaxOriginInstallLen  = 512
)

var _ record.Record = (*Record)(nil)

func init() {
	record.RegisterType(&Record{})
}

// Domain implements record.Record.
func (r *Record) Domain() string { return PayloadDomain }

// Codec implements record.Record.
func (r *Record) Codec() []byte { return PayloadCodec }

// MarshalRecord implements record.Record.
// HTML escaping is off so "<" costs one byte, not six: a description within
// its 4 KiB limit must never push the record past 16 KiB.
func (r *Record) MarshalRecord() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalRecord implements record.Record.
func (r *Record) UnmarshalRecord(b []byte) error {
	var tmp Record
	if err := json.Unmarshal(b, &tmp); err != nil {
		return fmt.Errorf("decode agent record: %w", err)
	}
	*r = tmp
	return nil
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// DeriveID computes the stable agent id: base32(sha256(marshalled public key ||
// name)), lower case. Only the holder of the key can publish under it.
func DeriveID(pub crypto.PubKey, name string) (string, error) {
	kb, err := crypto.MarshalPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("marshal public key: %w", err)
	}
	h := sha256.New()
	h.Write(kb)
	h.Write([]byte(name))
	return lowerASCII(idEncoding.EncodeToString(h.Sum(nil))), nil
}

// IDLen is the length of every derived id (52 base32 characters).
const IDLen = 52

// ValidID reports whether s has the shape of a derived id, so handlers can
// refuse junk before touching the store or the network.
func ValidID(s string) bool {
	if len(s) != IDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// PublisherPeerID returns the publisher as a peer.ID.
func (r *Record) PublisherPeerID() (peer.ID, error) {
	return peer.Decode(r.Publisher)
}

// HostPeerID is the peer that answers messages for this agent: the peer of its
// libp2p-mcp endpoint, or the publisher.
func (r *Record) HostPeerID() string {
	for _, e := range r.Endpoints {
		if e.Kind == EndpointLibp2pMCP && e.PeerID != "" {
			return e.PeerID
		}
	}
	return r.Publisher
}

// Heartbeat is a node's periodic liveness announcement on the status topic.
type Heartbeat struct {
	PeerID       string    `json:"peer_id"`
	Version      string    `json:"version"`
	Addrs        []string  `json:"addrs"`
	AgentsHosted int       `json:"agents_hosted"`
	Load         float64   `json:"load"`
	SentAt       time.Time `json:"sent_at"`
	// Health is what the sender has seen of (some of) the agents it hosts
	// (heartbeat.go); a host of more than MaxHeartbeatHealth agents sends
	// several heartbeats per interval, each with a share. On
	// agentsite/status/2 it is only the entries that changed since the
	// sender's last round, or, with Slice, one slice of the whole.
	Health []HostedHealth `json:"health,omitempty"`

	// The fields below are agentsite/status/2's (agent/heartbeat.go); a
	// heartbeat on agentsite/status/1 from an older node has none.

	// IntervalMS is how long the sender waits after this round before the
	// next: receivers' liveness thresholds and anti-flood gap follow it.
	IntervalMS int64 `json:"interval_ms,omitempty"`
	// Digest names the sender's whole health state after this round
	// (HealthDigest): equal digests, equal states.
	Digest string `json:"digest,omitempty"`
	// Slice, when set, says Health is slice Index of the Count slices of
	// the sender's whole health state (the periodic refresh), not a delta.
	Slice *HealthSlice `json:"slice,omitempty"`
	// Name is the sender's node name (--node-name, CheckNodeName): a
	// label people read, not an identity; "" from a node that has none.
	// It travels in every round, signed with the rest.
	Name string `json:"name,omitempty"`
	// Domains are the domains the sender proved it controls
	// (agent/verify: DNS TXT or HTTPS), sorted, at most
	// MaxHeartbeatDomains, each NormalizeDomain's spelling
	// (CheckHeartbeatDomains). It travels in every round, signed with the
	// rest, so a round without it says "none". A receiver proves each one
	// again itself before showing it: the field is a claim, not a proof.
	// Older nodes ignore it (encoding/json skips fields it does not know).
	Domains []string `json:"domains,omitempty"`
}

// Agent health states (docs/architecture.md "Agent health").
const (
	// HealthHealthy: probes and real turns succeed, quickly enough.
	HealthHealthy = "healthy"
	// HealthDegraded: slow, or some probes or turns fail.
	HealthDegraded = "degraded"
	// HealthFailing: the last probes failed, or most turns did.
	HealthFailing = "failing"
	// HealthUnknown: not probed or used yet (or its host says nothing).
	HealthUnknown = "unknown"
)

// Health is what an agent's hosting node has seen of how it answers:
// active probes and real turns. It travels in the host's signed
// heartbeat, so every mirror shows the same; a mirror never probes other
// nodes' agents. Nothing in it is secret (a probe's error stays on the
// host, for the owner).
type Health struct {
	State string `json:"state"`
	// LatencyMS is the median answer time over the last hour (0: none).
	LatencyMS int `json:"latency_ms,omitempty"`
	// SuccessRate is the share of probes and turns that succeeded over the
	// last hour, 0..1 (0 with no samples).
	SuccessRate float64   `json:"success_rate"`
	LastOKAt    time.Time `json:"last_ok_at,omitzero"`
	CheckedAt   time.Time `json:"checked_at,omitzero"`
	// Uses7d is how many conversations with at least one turn the host
	// held with the agent over the last 7 days (0: none, or a host that
	// does not count them), 0..MaxUses7d. A usage signal for people
	// choosing an agent ("Most used"), the host's word like the rest.
	Uses7d int `json:"uses_7d,omitempty"`
}
