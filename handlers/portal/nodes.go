package portal

import (
	"net/http"
	"slices"
	"strings"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// peerLister is a Node that can say which peers it is connected to, and
// which of them only through a relay (p2p.Node can); without it the
// picture shows only the nodes heard from.
type peerLister interface {
	ConnectedPeers() []string
	RelayedPeers() []string
}

// netPeers is every peer of the picture but self: connected ones first
// (so they are drawn when there are many), then the ones only heard from,
// each group in peer id order.
func netPeers(n Node, self string, nodes []store.Node) []web.NetPeer {
	var connected, relayed []string
	if pl, ok := n.(peerLister); ok {
		connected, relayed = pl.ConnectedPeers(), pl.RelayedPeers()
	}
	byID := map[string]web.NetPeer{}
	for _, nd := range nodes {
		if nd.PeerID != self {
			byID[nd.PeerID] = web.NetPeer{PeerID: nd.PeerID, Status: nd.Status, Agents: nd.AgentsHosted}
		}
	}
	for _, id := range connected {
		if id == self {
			continue
		}
		p := byID[id]
		p.PeerID, p.Connected = id, true
		p.Relayed = slices.Contains(relayed, id)
		byID[id] = p
	}
	out := make([]web.NetPeer, 0, len(byID))
	for _, p := range byID {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b web.NetPeer) int {
		if a.Connected != b.Connected {
			if a.Connected {
				return -1
			}
			return 1
		}
		return strings.Compare(a.PeerID, b.PeerID)
	})
	return out
}

// PageNodes is the Network page: a picture of the peers this node sees,
// the counts (this node included), this node's addresses to bootstrap
// from, and the nodes it has heard from.
func (p *Pages) PageNodes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	local, err := p.Catalog.ListLocal(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	nodes, err := p.Catalog.ListNodes(ctx)
	if err != nil {
		p.RenderError(w, r, err)
		return
	}
	self := p.Node.PeerID()
	now := p.now()
	rows := make([]web.NodeRow, 0, len(nodes))
	for _, n := range nodes {
		rows = append(rows, web.NodeRow{
			PeerID:           n.PeerID,
			Status:           n.Status,
			Version:          n.Version,
			AgentsHosted:     n.AgentsHosted,
			LastHeartbeat:    n.LastHeartbeat,
			LastHeartbeatAgo: web.Ago(n.LastHeartbeat, now),
			Self:             n.PeerID == self,
		})
	}
	peers := netPeers(p.Node, self, nodes)
	v := web.NodesView{
		Page:         p.page(r, p.viewer(r), "Network", "nodes"),
		PeerID:       self,
		Addrs:        p.Node.Addrs(),
		Peers:        p.Node.PeerCount(),
		AgentsHosted: len(local),
		Version:      p.Version,
		Nodes:        rows,
		NodesKnown:   len(peers) + 1, // and this node
		Map:          web.NewNetMap(web.NetPeer{PeerID: self, Status: store.StatusOnline, Connected: true, Agents: len(local)}, peers),
	}
	v.NAT = web.NodeNAT{Reachability: p.Node.Reachability(), RelayAddrs: p.Node.RelayAddrs()}
	v.NAT.DirectPeers, v.NAT.RelayedPeers = p.Node.PeerKinds()
	p.render(w, r, http.StatusOK, web.NodesPage(v))
}
