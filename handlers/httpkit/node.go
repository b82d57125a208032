package httpkit

// Node is this node's network side as the surfaces show it (its peer id,
// addresses, reachability and peers); searching the DHT is
// agent/discover's.
// The API and the portal show the same facts, so they share this one
// declaration; p2p.Node satisfies it.
type Node interface {
	PeerID() string
	// Addrs are full multiaddrs ending in /p2p/<id>, for bootstrapping.
	Addrs() []string
	PeerCount() int
	// Reachability is public, private or unknown (AutoNAT); RelayAddrs
	// are the addresses through relays the node holds a reservation on;
	// PeerKinds counts peers with a direct connection and those reached
	// only through a relay.
	Reachability() string
	RelayAddrs() []string
	PeerKinds() (direct, relayed int)
}
