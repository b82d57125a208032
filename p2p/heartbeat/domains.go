package heartbeat

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// Verified publishers (agent/verify): a node's heartbeats carry
// the domains it proved it controls, and each receiver hands the claims to
// Config.Claims, which proves them again itself before anything shows
// them. The heartbeats only carry the claims: it never looks up DNS or fetches
// proofs (and never imports the package that does).

// DomainClaims receives the domains other nodes claim in their heartbeats
// (agent/verify.Claims satisfies it). Claim is called once per accepted
// round, with the author's peer id and its domains, already checked by
// agent.CheckHeartbeatDomains (nil: it claims none, or no longer does).
// It must return at once: the proofs run elsewhere, under their own
// budget.
//
// Due is the domains of a claim that would cost the receiver a proof (a
// DNS look-up, an HTTPS fetch): each is charged to the introduction
// budget of the peer that forwarded the heartbeat, as a never-heard
// author is, so a rogue naming strangers' domains pays with its
// forwarders' allowance instead of making every node a reflector.
type DomainClaims interface {
	Claim(peerID string, domains []string)
	Due(peerID string, domains []string) []string
}

// ownDomains is what this round's heartbeat says this node proved
// (Config.Domains), checked as a receiver will check it: a source that
// breaks the wire rule sends none rather than a heartbeat every node
// refuses.
func (s *Service) ownDomains() []string {
	if s.cfg.Domains == nil {
		return nil
	}
	d := s.cfg.Domains()
	if len(d) == 0 {
		return nil
	}
	if err := agent.CheckHeartbeatDomains(d); err != nil {
		s.logger.Warn("not sending this node's verified domains", "domains", d, "err", err)
		return nil
	}
	return d
}

// claimDomains hands an accepted heartbeat's domains, forwarded by from,
// to Config.Claims, once the ones due a proof are charged to from's
// introduction allowance (and its IP group's). Over it, the round's
// claims are not handed on (the author's earlier ones stand) and the
// refusal is counted against from, as an introduction over it is.
func (s *Service) claimDomains(from peer.ID, author string, domains []string) {
	if s.cfg.Claims == nil {
		return
	}
	if from != "" && from != s.cfg.Self {
		now := s.now()
		for _, d := range s.cfg.Claims.Due(author, domains) {
			if err := s.cfg.Gate.Introduce("claim "+author+" "+d, from, now); err != nil {
				s.cfg.Gate.Refuse(from, fmt.Errorf("domain claims of %s: %w", author, err))
				return
			}
		}
	}
	s.cfg.Claims.Claim(author, domains)
}
