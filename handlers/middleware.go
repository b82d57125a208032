package handlers

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
)

// contentSecurityPolicy allows only our own scripts and styles: no inline
// script, no eval, no third-party origin. Pages must not use inline styles or
// handlers (htmx's indicator style is turned off in the layout for this).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// limitBody refuses bodies over n bytes: reads past it fail with
// *http.MaxBytesError, which the error renderer turns into a 413.
func (s *Server) limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				writeTooLarge(w, r, s)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}

// writeTooLarge is called by limitBody, before the handler.
func writeTooLarge(w http.ResponseWriter, r *http.Request, s *Server) {
	s.renderError(w, r, errorf(http.StatusRequestEntityTooLarge, "too_large", "The request body is too large."))
}

// recoverer turns a panic into a logged 500 instead of a dropped connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.Logger.ErrorContext(r.Context(), "panic in handler", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				e := errorf(http.StatusInternalServerError, "internal", "Something went wrong on our side; try again later.")
				if isAPI(r) {
					writeJSONError(w, e)
				} else {
					// Plain text: rendering a page is what may have panicked.
					http.Error(w, e.Message, e.Status)
				}
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// observe records request counts and latencies by route pattern (never by
// raw path, which would explode label cardinality).
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		route := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			route = rc.RoutePattern()
		}
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		s.metrics.observeRequest(r.Method, route, status, time.Since(start))
	})
}
