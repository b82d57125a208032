package handlers

import (
	"context"
	"net/http"
	"time"

	"github.com/agentsite/agentsite/handlers/httpkit"
)

// healthz says the process answers; it touches nothing else.
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
	} else if full := s.Config.StorageFull; full != nil && full() {
		// Still ready: every read is served, and taking the node out of
		// rotation would turn a full disk into an outage (on Postgres,
		// every replica shares the full disk anyway). Writes get 507.
		checks["store"] = "full"
		checks["store_detail"] = "the disk is full: writes are refused (507 storage_full), reads are served; " +
			"free space on the node's disk (the log names the directory)"
	}
	if !s.Node.Ready() {
		checks["p2p"] = "not ready"
		status = http.StatusServiceUnavailable
	}
	if status := s.Config.SearchIndexStatus; status != nil {
		// Not a readiness condition: until it loads, and while it retries
		// a failed read, searches are answered by the database, slower.
		state, kind := status()
		checks["search_index"] = state
		if kind != "" {
			checks["search_index_error"] = kind
		}
	}
	httpkit.WriteJSON(w, status, map[string]any{"ready": status == http.StatusOK, "checks": checks})
}
