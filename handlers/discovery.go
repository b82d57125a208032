package handlers

import (
	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/handlers/ard"
)

// discoveryRoutes mounts the discovery standards (issue 22): the ARD
// registry under ard.BasePath. Built with the routes, as publicMCP is.
func (s *Server) discoveryRoutes(r chi.Router) {
	reg := ard.New(s.Store, s.Node, s.Registry, s.Config.PublicURL, s.renderError)
	reg.Now = s.Now
	r.Route(ard.BasePath, func(r chi.Router) {
		r.Post("/search", reg.Search)
		r.Get("/agents", reg.List)
		r.Post("/explore", reg.Explore)
		r.MethodNotAllowed(s.apiMethodNotAllowed)
	})
}
