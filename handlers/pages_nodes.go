package handlers

import (
	"net/http"

	"github.com/agentsite/agentsite/web"
)

func (s *Server) pageNodes(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	local, err := s.Store.ListLocal(ctx)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	nodes, err := s.Store.ListNodes(ctx)
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	self := s.Node.PeerID()
	now := s.now()
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
		Page:         s.page(r, s.viewer(r), "Network", "nodes"),
		PeerID:       self,
		Addrs:        s.Node.Addrs(),
		Peers:        s.Node.PeerCount(),
		AgentsHosted: len(local),
		Version:      s.Config.Version,
		Nodes:        rows,
	}
	s.render(w, r, http.StatusOK, web.NodesPage(v))
}
