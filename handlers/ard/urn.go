package ard

import (
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
)

// URNs of a listing: urn:air:<publisher>:<namespace>:<name>, one per
// representation (an AI Catalog's identifier is unique within it): the
// A2A card under namespace "a2a", the MCP server card under "mcp".
//
// The publisher segment of the canonical URN is the publishing node's
// peer id: every mirror computes it from the signed record alone, so it
// is the same on every node of the planet, and it names one listing (the
// id derives from that key and the name). A publisher that proved a domain
// (agent/verify) also gets the URN with the domain in its place, as
// metadata ("agentsite.domainIdentifier"): it depends on which of the
// publisher's heartbeats a mirror has heard, so it is not the identity.
const (
	urnPrefix = "urn:air:"
	// NamespaceA2A and NamespaceMCP are the namespaces of a listing's
	// A2A card and MCP server card; NamespaceRegistry the node's ARD
	// registry's.
	NamespaceA2A      = "a2a"
	NamespaceMCP      = "mcp"
	NamespaceRegistry = "registry"
)

// URN is the canonical URN of rec's A2A card.
func URN(rec agent.Record) string { return URNIn(rec.Publisher, NamespaceA2A, rec.Name) }

// URNIn is urn:air:<publisher>:<namespace>:<name>.
func URNIn(publisher, namespace, name string) string {
	return urnPrefix + publisher + ":" + namespace + ":" + name
}

// ParseURN reads a canonical AgentSite URN (of either representation)
// back into the listing id it names, so a URN a mirror lacks can be looked
// up in the DHT. ok is false for anything else (a domain URN, another
// namespace, a malformed one).
func ParseURN(s string) (id string, ok bool) {
	rest, found := strings.CutPrefix(s, urnPrefix)
	if !found {
		return "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 || (parts[1] != NamespaceA2A && parts[1] != NamespaceMCP) ||
		!agent.IsSlug(parts[2], agent.MinNameLen, agent.MaxNameLen) {
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
