package httpkit

import (
	"net/http"
)

// Discovery documents (agent cards, the MCP server cards, the AI Catalog,
// the ARD registry's reads) are public and the same for every caller, so
// any page may read them: a browser client discovers an agent before it
// has anything to do with this node. Only these GET documents are opened
// to other origins, never with credentials (no Allow-Credentials: a
// cookie rides on no cross-origin read); the portal, the API and every
// state-changing endpoint stay same-origin.

// corsAllowHeaders are the request headers a discovery read may carry:
// the A2A and MCP version headers and the conditional GET's.
const corsAllowHeaders = "Accept, Content-Type, A2A-Version, MCP-Protocol-Version, If-None-Match, If-Modified-Since"

// AllowAnyOrigin marks a response as a public discovery document. ETag is
// exposed so a page can make its own conditional GETs.
func AllowAnyOrigin(h http.Header) {
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", "ETag")
}

// Preflight answers a CORS preflight (OPTIONS) for a public discovery
// document: GET, HEAD and OPTIONS, the headers above, kept a day.
func Preflight(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	AllowAnyOrigin(h)
	h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", "86400")
	h.Set("Allow", "GET, HEAD, OPTIONS")
	w.WriteHeader(http.StatusNoContent)
}

// PublicRead is middleware for a discovery document's GET: its answer,
// an error included, may be read by any page.
func PublicRead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			Preflight(w, r)
			return
		}
		AllowAnyOrigin(w.Header())
		next.ServeHTTP(w, r)
	})
}
