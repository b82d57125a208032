// Package apiwire holds the JSON shapes of the /api/v1 API: what the node
// sends and accepts, field for field. It is its own small package, with no
// HTTP in it, so that the API handlers and the API's clients (`agentsite
// demo`, the load tool, tests) share one definition and cannot drift apart.
// FromListing and FromPage turn the store's listings into these shapes for
// every surface that sends them (the API, MCP).
package apiwire

import (
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/verify"
)

// Agent is the API view of a listing (GET /api/v1/agents/{id}, one item of
// AgentList, the answer to a registration): the record's public fields plus
// what this node knows about it. Backend settings never appear here.
type Agent struct {
	ID          string           `json:"id"`
	Name        string           `json:"name"`
	DisplayName string           `json:"display_name"`
	Description string           `json:"description"`
	Tags        []string         `json:"tags"`
	Skills      []agent.Skill    `json:"skills"`
	Version     string           `json:"version"`
	Publisher   string           `json:"publisher"`
	Owner       string           `json:"owner,omitempty"`
	Endpoints   []agent.Endpoint `json:"endpoints"`
	Seq         uint64           `json:"seq"`
	IssuedAt    time.Time        `json:"issued_at"`
	ExpiresAt   time.Time        `json:"expires_at"`
	Tombstone   bool             `json:"tombstone,omitempty"`
	Status      string           `json:"status"`
	LastSeen    time.Time        `json:"last_seen"`
	HostPeerID  string           `json:"host_peer_id"`
	Local       bool             `json:"local"`
	// Health is what the agent's host last said of how it answers, the
	// same on every node (state "unknown" until it has said anything).
	Health agent.Health `json:"health"`
	// VerifiedDomains are the domains the agent's publisher proved it
	// controls (DNS TXT or HTTPS, checked by this node itself:
	// agent/verify), sorted; absent when none. They say who runs the
	// publishing node, not what its agents do.
	VerifiedDomains []string `json:"verified_domains,omitempty"`
	// BackendTest is what probing the backend found, on the answer to a
	// create or an update of an agent with a backend to probe (the
	// form's "Test backend"): the agent is saved either way.
	BackendTest *BackendTest `json:"backend_test,omitempty"`
}

// BackendTest is one probe of an agent's backend.
type BackendTest struct {
	OK bool `json:"ok"`
	// Message says what failed, where, and what to check; empty when OK.
	Message   string `json:"message,omitempty"`
	LatencyMS int64  `json:"latency_ms,omitempty"`
}

// AgentList is one page of GET /api/v1/agents; an empty NextCursor means
// it is the last.
type AgentList struct {
	Agents     []Agent `json:"agents"`
	NextCursor string  `json:"next_cursor"`
	// Total is how many listings the search matches over all its pages
	// (GET /api/v1/agents; absent where a search is not counted). When
	// TotalIsEstimate, the node counted only that far (its search index
	// was loading, or a filter the index does not hold): there are at
	// least Total.
	Total           *int `json:"total,omitempty"`
	TotalIsEstimate bool `json:"total_is_estimate,omitempty"`
}

// Total is a search's count of matches, for AppendAgentListTotal.
type Total struct {
	N     int
	Exact bool
}

// AgentInput is the body of POST /api/v1/agents (register) and PUT
// /api/v1/agents/{id} (update). The node rejects unknown fields. Its
// fields are registry.Input's, one for one: the API converts one into the
// other, so the compiler keeps the wire and the use case in step.
type AgentInput struct {
	Name        string        `json:"name"`
	DisplayName string        `json:"display_name"`
	Description string        `json:"description"`
	Tags        []string      `json:"tags"`
	Skills      []agent.Skill `json:"skills"`
	Version     string        `json:"version"`
	Backend     agent.Backend `json:"backend"`
	Origin      *agent.Origin `json:"origin,omitempty"`
}

// Node is GET /api/v1/node: who this node is and how to reach it over
// libp2p (Addrs are full multiaddrs, /p2p/<peer id> included).
type Node struct {
	PeerID string `json:"peer_id"`
	// Name is the node's name for people (--node-name): a label, not an
	// identity (absent when it has none).
	Name         string   `json:"name,omitempty"`
	Addrs        []string `json:"addrs"`
	Version      string   `json:"version"`
	AgentsHosted int      `json:"agents_hosted"`
	Peers        int      `json:"peers"`
	// Reachability is public, private or unknown, as AutoNAT finds it;
	// RelayAddrs are the node's addresses through relays (a node behind
	// NAT is reached on those); DirectPeers and RelayedPeers split Peers
	// by whether a direct connection exists.
	Reachability string   `json:"reachability"`
	RelayAddrs   []string `json:"relay_addrs"`
	DirectPeers  int      `json:"direct_peers"`
	RelayedPeers int      `json:"relayed_peers"`
	// Domains are the domains this node claims (--verify-domain) and how
	// their proofs went: what to fix when one is not verified.
	Domains []verify.Status `json:"domains"`
	// Sync is how this node's catalogue fills from its peers; absent on
	// a node without a network.
	Sync *SyncProgress `json:"sync,omitempty"`
}

// SyncProgress is catalogue sync's progress: the shards of the id space
// being filled from a peer now and those read to their end from one, and
// what each peer synced with lately brought (at most 256 peers, the most
// lately synced).
type SyncProgress struct {
	FillingShards int        `json:"filling_shards"`
	FilledShards  int        `json:"filled_shards"`
	Shards        int        `json:"shards"`
	Peers         []PeerSync `json:"peers"`
	// QuotaRefusals are the publishers whose new listings this node
	// refused over their per-publisher quota, most refused first (at most
	// 50): a host held only in part says here why.
	QuotaRefusals []QuotaRefusal `json:"quota_refusals"`
}

// QuotaRefusal is one publisher's listings refused over its quota: the
// quota grows while the publisher is heard (up to what its heartbeats say
// it hosts and --max-listings); --max-listings-per-publisher is where it
// starts.
type QuotaRefusal struct {
	Publisher string    `json:"publisher"`
	Refused   int       `json:"refused"`
	Held      int       `json:"held"`
	Quota     int       `json:"quota"`
	Heard     bool      `json:"heard"`
	Last      time.Time `json:"last"`
}

// PeerSync is what catalogue sync brought from one peer since the node
// started.
type PeerSync struct {
	PeerID string `json:"peer_id"`
	// Held is how many listings this node holds that the peer hosts, of
	// Announced, the listings it says it hosts (the signed agents_hosted
	// of its heartbeats; absent when none was heard since the node
	// started). A peer that relays others' listings (a mirror) hosts
	// few or none itself.
	Held      int  `json:"held"`
	Announced *int `json:"announced,omitempty"`
	// Bytes of sync answers read from the peer.
	Bytes int64 `json:"bytes"`
	// Records pulled from it by result (new, known, held, raced,
	// outdated, refused, invalid), and Refused the records not taken by
	// reason (quota: the publisher's share of this node's catalogue or a
	// relaying peer's hourly allowance; full: --max-listings; the
	// record's faults: signature, expired, invalid, …).
	Records map[string]int64 `json:"records"`
	Refused map[string]int64 `json:"refused"`
	// FillingShards are the shards being filled from it now.
	FillingShards int       `json:"filling_shards"`
	LastSync      time.Time `json:"last_sync"`
}

// MessageIn is the body of POST /api/v1/agents/{id}/messages; without a
// ConversationID the turn starts a new conversation.
type MessageIn struct {
	Text           string `json:"text"`
	ConversationID string `json:"conversation_id,omitempty"`
	// Approval answers the tool call a reply waits on (MessageOut's
	// Approval), in its conversation; Text may then be empty.
	Approval *agent.ApprovalAnswer `json:"approval,omitempty"`
}

// PendingApproval is a tool call the agent waits to have approved (docs/
// agents.md, "Tools and approvals"), and how to answer it.
type PendingApproval struct {
	agent.Approval
	Answer string `json:"answer"`
}

// MessageOut is the answer to a MessageIn: the agent's reply and the
// conversation to continue.
type MessageOut struct {
	ConversationID string `json:"conversation_id"`
	MessageID      int64  `json:"message_id"`
	Reply          string `json:"reply"`
	// Steps are the delegations the agent made for this reply (agents
	// that call agents), in order; absent when it made none.
	Steps []agent.Step `json:"steps,omitempty"`
	// NeedsInput is set when the agent waits for the next message in
	// the conversation (Reply is its question); Approval, when that is a
	// yes or no to a tool call.
	NeedsInput bool             `json:"needs_input,omitempty"`
	Approval   *PendingApproval `json:"approval,omitempty"`
}

// NetworkSearch is the answer to POST /api/v1/network/search?tag=: how
// many providers of the tag the DHT named and how many records that
// brought in.
type NetworkSearch struct {
	Tag       string `json:"tag"`
	Providers int    `json:"providers"`
	Records   int    `json:"records"`
}

// ErrorBody is every error answer of the API.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is a stable machine-readable code, a message safe to show a
// person, and, for invalid input, what is wrong with which field.
type Error struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

// MaxBatchItems bounds the items of one POST /api/v1/agents:batch.
const MaxBatchItems = 1000

// BatchRequest is the body of POST /api/v1/agents:batch (operator token):
// up to MaxBatchItems registrations, each registered as POST
// /api/v1/agents would (an item whose name this node already hosts
// updates that agent).
type BatchRequest struct {
	Items []AgentInput `json:"items"`
}

// BatchResponse is what became of each item, in the request's order.
type BatchResponse struct {
	Results []BatchResult `json:"results"`
	Created int           `json:"created"`
	Updated int           `json:"updated"`
	Refused int           `json:"refused"`
}

// BatchResult is one item's outcome: created, updated or refused (with
// the error a single registration would have answered).
type BatchResult struct {
	Index   int    `json:"index"`
	Name    string `json:"name"`
	ID      string `json:"id,omitempty"`
	Outcome string `json:"outcome"`
	Error   *Error `json:"error,omitempty"`
}
