package handlers

import (
	"net/http"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// logIfServer logs 5xx errors with the original (internal) text; client
// errors and cancellations are not worth a log line.
func (s *Server) logIfServer(r *http.Request, e *httpkit.Error, err error) {
	if e.Status >= 500 {
		s.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", err)
	}
}

// isAPI reports whether the request wants JSON errors: the API, and /mcp
// and A2A for what is refused before their surfaces see it.
func isAPI(r *http.Request) bool {
	p := r.URL.Path
	return strings.HasPrefix(p, "/api/") || p == "/mcp" || p == "/a2a" || strings.HasPrefix(p, "/a2a/")
}

// renderError is the one error renderer: JSON for the API (and /mcp), the
// portal's page or HTMX fragment for everything else.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, err error) {
	if !isAPI(r) {
		s.pages.RenderError(w, r, err)
		return
	}
	e := httpkit.Classify(err)
	s.logIfServer(r, e, err)
	if e.Status == httpkit.StatusClientClosed {
		return
	}
	httpkit.WriteJSONError(w, e)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if isAPI(r) {
		httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusNotFound, string(agent.CodeNotFound), "No such API route; see GET /api/v1/agents."))
		return
	}
	s.renderErrorWithSession(w, r, httpkit.Errorf(http.StatusNotFound, string(agent.CodeNotFound), "There is no page here."))
}

// renderErrorWithSession is renderError for middleware that runs before
// the session is loaded: a page shows who is logged in.
func (s *Server) renderErrorWithSession(w http.ResponseWriter, r *http.Request, e *httpkit.Error) {
	if isAPI(r) {
		s.renderError(w, r, e)
		return
	}
	s.sessions.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, e)
	})).ServeHTTP(w, r)
}

func (s *Server) apiMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusMethodNotAllowed, string(agent.CodeMethodNotAllowed), "This method is not allowed on this route."))
}

func (s *Server) tooManyRequests(w http.ResponseWriter, r *http.Request) {
	s.renderError(w, r, httpkit.ErrRateLimited)
}

func (s *Server) pageMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.pages.RenderError(w, r, httpkit.Errorf(http.StatusMethodNotAllowed, string(agent.CodeMethodNotAllowed), "This page does not accept that kind of request."))
}
