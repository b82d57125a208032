package handlers

import (
	"github.com/go-chi/chi/v5"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"

	"github.com/agentsite/agentsite/handlers/ard"
	"github.com/agentsite/agentsite/handlers/discovery"
)

// discoveryRoutes mounts the discovery standards, so that other
// directories and clients find this node's agents by them: the ARD
// registry under ard.BasePath, the AI Catalog and the MCP server cards.
// Built with the routes, as publicMCP is.
func (s *Server) discoveryRoutes(r chi.Router) {
	reg := ard.New(s.Discover, s.Store, s.Node, s.Config.PublicURL, s.renderError)
	reg.Now = s.Now
	reg.ReferAfter = s.Config.ReferAfter
	if s.verified != nil { // nil leaves ARD's memo of answers on
		reg.Publishers = s.verified
	}
	r.Route(ard.BasePath, func(r chi.Router) {
		r.Post("/search", reg.Search)
		publicRead(r, "/agents", reg.List) // the one read by GET: open to any page
		r.Post("/explore", reg.Explore)
		r.MethodNotAllowed(s.apiMethodNotAllowed)
	})

	cat := &discovery.Handler{Catalog: s.Store, PeerID: s.Node.PeerID(), Key: s.nodeKey(),
		PublicURL: s.Config.PublicURL, Version: s.Config.Version, Now: s.Now, Fail: s.renderError}
	if v := s.verified; v != nil {
		self := s.Node.PeerID()
		cat.Domains = func() []string { return v.Domains(self) }
	}
	// Discovery documents: any page may read them (CORS), as the server
	// card's specification wants for browser clients.
	publicRead(r, discovery.CatalogPath, cat.ServeCatalog)
	publicRead(r, "/mcp/server-card", cat.NodeServerCard)
	publicRead(r, discovery.LegacyServerCardPath, cat.NodeServerCard)
	publicRead(r, "/mcp/agents/{id}/server-card", cat.AgentServerCard)
}

// nodeKey is the node's libp2p key (it signs the AI Catalog's Trust
// Manifest), from the host's peerstore; nil when the node has none.
func (s *Server) nodeKey() crypto.PrivKey {
	h, ok := s.Node.(interface{ Host() host.Host })
	if !ok || h.Host() == nil {
		return nil
	}
	return h.Host().Peerstore().PrivKey(h.Host().ID())
}
