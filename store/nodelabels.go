package store

import (
	"context"
	"slices"
)

// NodeLabel is how people see a node: its name when it has one, with the
// short peer ID beside it when another node uses the same name (a name is
// a label, not an identity), or the short peer ID alone.
type NodeLabel struct {
	PeerID string
	Name   string // what the node calls itself; "" when it says nothing
	// Short is the end of the peer ID, set when it must be shown: the
	// node has no name, or shares it.
	Short string
	Self  bool // this node
}

// String is the label as one line of text: "node-b", "node-b (goNzdr)"
// for a shared name, "node goNzdr" without one.
func (l NodeLabel) String() string {
	switch {
	case l.Name == "":
		return "node " + l.Short
	case l.Short != "":
		return l.Name + " (" + l.Short + ")"
	}
	return l.Name
}

// ShortPeerID is the end of a peer ID that the pages show for a node: its
// last six characters (every Ed25519 peer ID shares its first ones).
func ShortPeerID(peerID string) string {
	if len(peerID) > 6 {
		return peerID[len(peerID)-6:]
	}
	return peerID
}

// NodeNamer is what NodeLabels reads: the node rows and whether a name is
// shared.
type NodeNamer interface {
	GetNodes(ctx context.Context, peerIDs []string) ([]Node, error)
	SharedNodeNames(ctx context.Context, names []string) (map[string]bool, error)
}

// NodeLabels names nodes for people, from the names their heartbeats
// carried (this node's own from its flag). It reads the nodes table two
// statements per call, however many peers it is asked about, so a page
// of cards labels its hosts at once.
type NodeLabels struct {
	Nodes    NodeNamer
	SelfID   string
	SelfName string
}

// Labels labels peerIDs. A node without a row (never heard) or whose row
// cannot be read gets its short peer ID; err says the second.
func (n *NodeLabels) Labels(ctx context.Context, peerIDs []string) (map[string]NodeLabel, error) {
	out := make(map[string]NodeLabel, len(peerIDs))
	var others []string
	for _, id := range peerIDs {
		if _, ok := out[id]; ok {
			continue
		}
		out[id] = NodeLabel{PeerID: id, Short: ShortPeerID(id)}
		if id != n.SelfID {
			others = append(others, id)
		}
	}
	if _, ok := out[n.SelfID]; ok {
		out[n.SelfID] = NodeLabel{PeerID: n.SelfID, Name: n.SelfName, Short: ShortPeerID(n.SelfID), Self: true}
	}
	if n.Nodes == nil {
		return n.finish(ctx, out)
	}
	rows, err := n.Nodes.GetNodes(ctx, others)
	if err != nil {
		return out, err
	}
	for _, r := range rows {
		if l, ok := out[r.PeerID]; ok && r.Name != "" {
			l.Name = r.Name
			out[r.PeerID] = l
		}
	}
	return n.finish(ctx, out)
}

// finish keeps the short ID only beside shared names.
func (n *NodeLabels) finish(ctx context.Context, out map[string]NodeLabel) (map[string]NodeLabel, error) {
	var names []string
	for _, l := range out {
		if l.Name != "" && !slices.Contains(names, l.Name) {
			names = append(names, l.Name)
		}
	}
	shared := map[string]bool{}
	if len(names) > 0 && n.Nodes != nil {
		var err error
		if shared, err = n.Nodes.SharedNodeNames(ctx, names); err != nil {
			return out, err // short IDs kept: safe when unsure
		}
	}
	// Two nodes of this one call share a name even before both have rows
	// (this node's own name is never in the nodes table).
	count := map[string]int{}
	for _, l := range out {
		count[l.Name]++
	}
	for id, l := range out {
		if l.Name != "" && (l.Self || !shared[l.Name] && count[l.Name] == 1 && !n.sharesSelf(l)) {
			l.Short = ""
			out[id] = l
		}
	}
	return out, nil
}

// sharesSelf: another node calls itself what this node does. (This node
// itself is marked as such wherever it is shown, so it needs no short ID.)
func (n *NodeLabels) sharesSelf(l NodeLabel) bool {
	return !l.Self && n.SelfName != "" && l.Name == n.SelfName
}

// Label labels one node; a failed read labels it by its short peer ID.
func (n *NodeLabels) Label(ctx context.Context, peerID string) NodeLabel {
	m, _ := n.Labels(ctx, []string{peerID})
	return m[peerID]
}

// HostLabel is the label of the node hosting l, as one line ("node-b"):
// what delegation steps and find_agents say. This node's own listings
// are "this node", which tells a delegating model (and people) where the
// agent runs better than any name.
func (n *NodeLabels) HostLabel(ctx context.Context, l Listing) string {
	if l.Local {
		return "this node"
	}
	return n.Label(ctx, l.HostPeerID).String()
}
