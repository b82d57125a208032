package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/static"
)

// staticHandler serves the embedded assets under their content-hashed names
// (/static/app.1a2b3c4d.css), cacheable forever. Anything else under
// /static/ is a plain 404: these requests carry no session, so the portal's
// error page (which reads the session) is not used here.
func (s *Server) staticHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Method not allowed.", http.StatusMethodNotAllowed)
			return
		}
		a, ok := static.Lookup(strings.TrimPrefix(r.URL.Path, static.Prefix))
		if !ok {
			http.Error(w, "Not found.", http.StatusNotFound)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.ContentType)
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
		h.Set("ETag", a.ETag)
		h.Set("Vary", "Accept-Encoding")
		if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, a.ETag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		body := a.Body
		if a.Gzip != nil && acceptsGzip(r) {
			h.Set("Content-Encoding", "gzip")
			body = a.Gzip
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}

// acceptsGzip reports whether the client lists gzip in Accept-Encoding
// without refusing it (q=0).
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			continue
		}
		_, q, found := strings.Cut(strings.ReplaceAll(params, " ", ""), "q=")
		if !found {
			return true
		}
		v, err := strconv.ParseFloat(q, 64)
		return err == nil && v > 0
	}
	return false
}
