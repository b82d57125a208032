package portal

import (
	"net/http"

	"github.com/agentsite/agentsite/web"
)

// PageNodes shows this node (its addresses, to bootstrap from) and the
// nodes it has heard from.
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
	v := web.NodesView{
		Page:         p.page(r, p.viewer(r), "Network", "nodes"),
		PeerID:       self,
		Addrs:        p.Node.Addrs(),
		Peers:        p.Node.PeerCount(),
		AgentsHosted: len(local),
		Version:      p.Version,
		Nodes:        rows,
	}
	v.NAT = web.NodeNAT{Reachability: p.Node.Reachability(), RelayAddrs: p.Node.RelayAddrs()}
	v.NAT.DirectPeers, v.NAT.RelayedPeers = p.Node.PeerKinds()
	p.render(w, r, http.StatusOK, web.NodesPage(v))
}
