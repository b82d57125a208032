package p2p

import "github.com/agentsite/agentsite/agent"

// Verified publishers (issue 22, agent/verify): a node's heartbeats carry
// the domains it proved it controls, and each receiver hands the claims to
// Config.Claims, which proves them again itself before anything shows
// them. p2p only carries the claims: it never looks up DNS or fetches
// proofs (and never imports the package that does).

// DomainClaims receives the domains other nodes claim in their heartbeats
// (agent/verify.Claims satisfies it). Claim is called once per accepted
// round, with the author's peer id and its domains, already checked by
// agent.CheckHeartbeatDomains (nil: it claims none, or no longer does).
// It must return at once: the proofs run elsewhere, under their own
// budget.
type DomainClaims interface {
	Claim(peerID string, domains []string)
}

// ownDomains is what this round's heartbeat says this node proved
// (Config.Domains), checked as a receiver will check it: a source that
// breaks the wire rule sends none rather than a heartbeat every node
// refuses.
func (n *Node) ownDomains() []string {
	if n.cfg.Domains == nil {
		return nil
	}
	d := n.cfg.Domains()
	if len(d) == 0 {
		return nil
	}
	if err := agent.CheckHeartbeatDomains(d); err != nil {
		n.logger.Warn("not sending this node's verified domains", "domains", d, "err", err)
		return nil
	}
	return d
}

// claimDomains hands an accepted heartbeat's domains to Config.Claims.
func (n *Node) claimDomains(author string, domains []string) {
	if n.cfg.Claims != nil {
		n.cfg.Claims.Claim(author, domains)
	}
}
