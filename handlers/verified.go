package handlers

import "github.com/agentsite/agentsite/agent/verify"

// Verified is what the surfaces know of verified publishers, so a reader
// can tell a listing's domain was proved rather than claimed:
// the domains each publisher proved, as this node checked them itself
// (agent/verify.Claims; its own node's answer for its own peer id).
type Verified interface {
	// Domains is the domains publisher (a peer id) proved, sorted; nil
	// when none.
	Domains(publisher string) []string
	// Publishers is the peers with at least one proved domain.
	Publishers() []string
	// Generation changes whenever an answer of the two above may have:
	// answers built from them are cached under it.
	Generation() uint64
	// OwnStatuses is every domain this node claims (--verify-domain) and
	// how its proof went.
	OwnStatuses() []verify.Status
}
