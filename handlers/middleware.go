package handlers

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentsite/agentsite/handlers/connlimit"
	"github.com/agentsite/agentsite/handlers/httpkit"
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
	s.renderError(w, r, httpkit.ErrTooLarge)
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
				e := httpkit.ErrInternal
				if isAPI(r) {
					httpkit.WriteJSONError(w, e)
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

// refuseOverLimit answers requests on connections the listener admitted
// over a cap (connlimit.Listener): 429 over the client's cap, 503 over the
// process cap, and the connection closes after the answer. Health checks
// are answered anyway: they are cheap and say whether the node is alive.
func (s *Server) refuseOverLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := connlimit.VerdictOf(r.Context())
		if v == connlimit.Admitted {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		// Nothing more is read from this connection: net/http would
		// otherwise wait for the rest of an unread body before closing.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Retry-After", "10")
		e := httpkit.Errorf(http.StatusTooManyRequests, "too_many_connections", "You have too many connections open to this node; close some and try again.")
		if v == connlimit.OverTotal {
			e = httpkit.Errorf(http.StatusServiceUnavailable, "server_busy", "This node is serving as many connections as it can; try again in a few seconds.")
		}
		s.renderError(w, r, e)
	})
}

// streamingRoute reports whether a route's response may legitimately take
// as long as a chat turn: MCP tool calls, the message API and A2A's
// message/send and message/stream run a whole turn before (or while) they
// answer. The WebSocket sets its own deadlines.
func streamingRoute(r *http.Request) bool {
	p := r.URL.Path
	return p == "/mcp" || p == "/api/v1/chat" || (r.Method == http.MethodPost && strings.HasSuffix(p, "/messages")) ||
		(r.Method == http.MethodPost && (strings.HasPrefix(p, "/chat/") || p == "/a2a" || strings.HasPrefix(p, "/a2a/")))
}

// deadlines bounds how long a client may take to send a request body and
// to read the response, so slow clients cannot hold connections forever.
// The body deadline is lifted once the body is read: net/http's background
// read on an idle connection would otherwise cancel a long turn's context.
func (s *Server) deadlines(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		write := s.Config.WriteTimeout
		if streamingRoute(r) {
			write = s.Config.StreamWriteTimeout
		}
		if write > 0 && r.URL.Path != "/api/v1/chat" {
			_ = rc.SetWriteDeadline(time.Now().Add(write))
		}
		if s.Config.BodyTimeout > 0 && r.Body != nil && r.Body != http.NoBody {
			if rc.SetReadDeadline(time.Now().Add(s.Config.BodyTimeout)) == nil {
				r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			}
		}
		next.ServeHTTP(w, r)
	})
}

var errSlowBody = httpkit.Errorf(http.StatusRequestTimeout, "body_timeout", "The request body arrived too slowly; send it again.")

// deadlineBody lifts the connection's read deadline when the body has
// been read to its end.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return n, errSlowBody
	}
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}
