package ard

import (
	"fmt"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// URN scheme of a listing: urn:air:<publisher>:<namespace>:<name>.
//
// The publisher part of the canonical URN is the publishing node's peer
// id: every mirror computes it from the signed record alone, so it is the
// same on every node of the planet, and it names one listing (the id is
// derived from that key and the name). A publisher that proved a domain
// (agent/verify) also has an alias URN with the domain in its place; the
// alias depends on what a mirror has heard of the publisher's heartbeats,
// so it is never the identity.
const (
	urnPrefix = "urn:air:"
	// Namespace of AgentSite listings.
	Namespace = "agentsite"
)

// URN is the canonical URN of rec.
func URN(rec agent.Record) string {
	return urnPrefix + rec.Publisher + ":" + Namespace + ":" + rec.Name
}

// DomainURN is rec's alias under a verified domain of its publisher.
func DomainURN(domain string, rec agent.Record) string {
	return urnPrefix + domain + ":" + Namespace + ":" + rec.Name
}

// ParseURN reads a canonical AgentSite URN back into the listing id it
// names (derived from the publisher's key and the name), so a URN a
// mirror lacks can be looked up in the DHT. ok is false for anything else
// (another namespace, a domain URN, a malformed one).
func ParseURN(s string) (id string, ok bool) {
	rest, found := strings.CutPrefix(s, urnPrefix)
	if !found {
		return "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 || parts[1] != Namespace || !agent.IsSlug(parts[2], agent.MinNameLen, agent.MaxNameLen) {
		return "", false
	}
	pid, err := peer.Decode(parts[0])
	if err != nil {
		return "", false
	}
	pub, err := pid.ExtractPublicKey()
	if err != nil {
		return "", false
	}
	id, err = agent.DeriveID(pub, parts[2])
	if err != nil {
		return "", false
	}
	return id, true
}

// checkURN says why s is not a URN this registry can read.
func checkURN(s string) error {
	if _, ok := ParseURN(s); !ok {
		return fmt.Errorf("%q is not an AgentSite URN (urn:air:<peer id>:%s:<name>)", s, Namespace)
	}
	return nil
}
