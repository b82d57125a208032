package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Error is an error with a status, a stable machine code and a message that
// is safe to show a user. Everything else becomes a 500 with a generic text.
type Error struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
	// RetryAfter, in seconds, is sent as Retry-After when positive.
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// errorf builds an *Error.
func errorf(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// storeRetryAfter is the Retry-After (seconds) of a 503 for an unreachable
// store: about one store deadline, the time an outage takes to be noticed.
const storeRetryAfter = 5

// errStoreUnavailable is the answer while the database is down or stalled.
var errStoreUnavailable = &Error{
	Status:     http.StatusServiceUnavailable,
	Code:       "store_unavailable",
	Message:    "The database is not answering right now. Try again in a few seconds.",
	RetryAfter: storeRetryAfter,
}

// statusClientClosed is nginx's convention for "client went away"; it is
// never sent, only counted.
const statusClientClosed = 499

// toError classifies err into an *Error (one place for every handler).
func toError(err error) *Error {
	var e *Error
	var ve *agent.ValidationError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &ve):
		return &Error{Status: http.StatusUnprocessableEntity, Code: "invalid_input", Message: "Some fields are invalid; see fields.", Fields: ve.Fields}
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, "too_large", "The request body is too large.")
	case errors.Is(err, store.ErrUnavailable):
		return errStoreUnavailable
	case errors.Is(err, store.ErrNotFound):
		return errorf(http.StatusNotFound, "not_found", "Not found.")
	case errors.Is(err, store.ErrStale):
		return errorf(http.StatusConflict, "stale", "A newer version of this record is already known.")
	case errors.Is(err, store.ErrConflict):
		return errorf(http.StatusConflict, "conflict", "That conflicts with something that already exists.")
	case errors.Is(err, store.ErrBadCursor):
		return errorf(http.StatusBadRequest, "bad_cursor", "The cursor is invalid; start again without one.")
	case errors.Is(err, context.Canceled):
		return errorf(statusClientClosed, "canceled", "The request was canceled.")
	case errors.Is(err, context.DeadlineExceeded):
		return errorf(http.StatusServiceUnavailable, "timeout", "The server took too long; try again.")
	}
	return errorf(http.StatusInternalServerError, "internal", "Something went wrong on our side; try again later.")
}

// logIfServer logs 5xx errors with the original (internal) text; client
// errors and cancellations are not worth a log line.
func (s *Server) logIfServer(r *http.Request, e *Error, err error) {
	if e.Status >= 500 {
		s.Logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "err", err)
	}
}

// isAPI reports whether the request wants JSON errors: the API, and /mcp
// for what is refused before mcp-go sees it.
func isAPI(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/api/") || r.URL.Path == "/mcp"
}

// renderError is the one error renderer: JSON for the API, a page or an
// HTMX fragment for the portal.
func (s *Server) renderError(w http.ResponseWriter, r *http.Request, err error) {
	e := toError(err)
	s.logIfServer(r, e, err)
	if e.Status == statusClientClosed {
		return
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if isAPI(r) {
		writeJSONError(w, e)
		return
	}
	if e.Status == http.StatusRequestTimeout {
		// net/http has cancelled the request (its body read failed);
		// the client may still be there to read why.
		r = r.WithContext(context.WithoutCancel(r.Context()))
	}
	s.renderErrorPage(w, r, e)
}

type jsonErrorBody struct {
	Error jsonError `json:"error"`
}

type jsonError struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Fields  map[string]string `json:"fields,omitempty"`
}

func writeJSONError(w http.ResponseWriter, e *Error) {
	writeJSON(w, e.Status, jsonErrorBody{Error: jsonError{Code: e.Code, Message: e.Message, Fields: e.Fields}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if isAPI(r) {
		writeJSONError(w, errorf(http.StatusNotFound, "not_found", "No such API route; see GET /api/v1/agents."))
		return
	}
	s.renderErrorWithSession(w, r, errorf(http.StatusNotFound, "not_found", "There is no page here."))
}

// renderErrorWithSession is renderError for middleware that runs before
// the session is loaded: a page shows who is logged in.
func (s *Server) renderErrorWithSession(w http.ResponseWriter, r *http.Request, e *Error) {
	if isAPI(r) {
		s.renderError(w, r, e)
		return
	}
	s.loadSession(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, e)
	})).ServeHTTP(w, r)
}

func (s *Server) apiMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	writeJSONError(w, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "This method is not allowed on this route."))
}

func (s *Server) tooManyRequests(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Retry-After", "60")
	s.renderError(w, r, errorf(http.StatusTooManyRequests, "rate_limited", "Too many attempts; wait a minute and try again."))
}

func (s *Server) pageMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.renderErrorPage(w, r, errorf(http.StatusMethodNotAllowed, "method_not_allowed", "This page does not accept that kind of request."))
}
