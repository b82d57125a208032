package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/agentsite/agentsite/handlers/httpkit"
)

type nodeJSON struct {
	PeerID       string   `json:"peer_id"`
	Addrs        []string `json:"addrs"`
	Version      string   `json:"version"`
	AgentsHosted int      `json:"agents_hosted"`
	Peers        int      `json:"peers"`
}

func (s *Server) apiNode(w http.ResponseWriter, r *http.Request) {
	local, err := s.Store.ListLocal(r.Context())
	if err != nil {
		s.renderError(w, r, err)
		return
	}
	addrs := s.Node.Addrs()
	if addrs == nil {
		addrs = []string{}
	}
	httpkit.WriteJSON(w, http.StatusOK, nodeJSON{
		PeerID:       s.Node.PeerID(),
		Addrs:        addrs,
		Version:      s.Config.Version,
		AgentsHosted: len(local),
		Peers:        s.Node.PeerCount(),
	})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	httpkit.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz reports ready only when the store answers and the network side is
// up, so an orchestrator does not route traffic to a half-started node.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{"store": "ok", "p2p": "ok"}
	status := http.StatusOK
	if err := s.Store.Ping(ctx); err != nil {
		checks["store"] = "unreachable"
		status = http.StatusServiceUnavailable
	}
	if !s.Node.Ready() {
		checks["p2p"] = "not ready"
		status = http.StatusServiceUnavailable
	}
	httpkit.WriteJSON(w, status, map[string]any{"ready": status == http.StatusOK, "checks": checks})
}
