// Package httpkit is what every HTTP surface (portal, API, WebSocket, MCP,
// A2A) shares: the one mapping of errors to HTTP statuses, stable codes and
// safe messages, JSON bodies, who the client is, and per-client budgets.
// It lives below the surfaces because the handlers root, which wires them
// in routes.go, cannot be imported by them.
package httpkit

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Error is a response error: an HTTP status, and the code and message of
// its body. Transports build it for their own failures (a bad JSON body, a
// refused connection); domain errors are mapped to it by Classify.
type Error struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
	// RetryAfter, in seconds, is sent as Retry-After when positive.
	RetryAfter int
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error.
func Errorf(status int, code, message string) *Error {
	return &Error{Status: status, Code: code, Message: message}
}

// StatusClientClosed is nginx's convention for "client went away"; it is
// never sent, only counted.
const StatusClientClosed = 499

// storeRetryAfter is the Retry-After (seconds) of a 503 for an unreachable
// store: about one store deadline, the time an outage takes to be noticed.
const storeRetryAfter = 5

// Errors of this transport.
var (
	ErrStoreUnavailable = &Error{Status: http.StatusServiceUnavailable, Code: string(agent.CodeStoreUnavailable),
		Message: "The database is not answering right now. Try again in a few seconds.", RetryAfter: storeRetryAfter}
	// ErrStorageFull answers a write the store has no room for (its disk
	// is full): 507, and what to do next. The store's log line names the
	// directory; the answer does not show the server's paths.
	ErrStorageFull = Errorf(http.StatusInsufficientStorage, "storage_full",
		"This node's disk is full, so it cannot save anything new; reading still works. The node's operator must free disk space (the node's log says where).")
	ErrTooLarge = Errorf(http.StatusRequestEntityTooLarge, "too_large", "The request body is too large.")
	ErrInternal = Errorf(http.StatusInternalServerError, string(agent.CodeInternal), "Something went wrong on our side; try again later.")
	// ErrRateLimited answers a client over one of its per-minute budgets
	// (logins, writes, chat turns over the API).
	ErrRateLimited = &Error{Status: http.StatusTooManyRequests, Code: string(agent.CodeRateLimited),
		Message: "Too many attempts; wait a minute and try again.", RetryAfter: 60}
)

// kindStatus is the HTTP status of each kind of domain error.
var kindStatus = map[agent.Kind]int{
	agent.KindInternal:     http.StatusInternalServerError,
	agent.KindInvalid:      http.StatusBadRequest, // 422 when fields are named
	agent.KindNotFound:     http.StatusNotFound,
	agent.KindGone:         http.StatusGone,
	agent.KindConflict:     http.StatusConflict,
	agent.KindUnauthorized: http.StatusUnauthorized,
	agent.KindForbidden:    http.StatusForbidden,
	agent.KindTooLarge:     http.StatusRequestEntityTooLarge,
	agent.KindRateLimited:  http.StatusTooManyRequests,
	agent.KindUnavailable:  http.StatusServiceUnavailable,
	agent.KindTimeout:      http.StatusGatewayTimeout,
	agent.KindUpstream:     http.StatusBadGateway,
	agent.KindCanceled:     StatusClientClosed,
}

// Classify maps any error to what a response says about it: the one
// mapping from error kinds to HTTP for every surface. Anything unknown is a
// 500 with a generic text; its details are only logged.
func Classify(err error) *Error {
	var e *Error
	var mbe *http.MaxBytesError
	if errors.As(err, &e) {
		return e
	}
	if de := agent.AsError(err); de != nil && de.Kind != agent.KindInternal {
		status := kindStatus[de.Kind]
		if de.Kind == agent.KindInvalid && de.Code == agent.CodeInvalidInput {
			status = http.StatusUnprocessableEntity
		}
		return &Error{Status: status, Code: string(de.Code), Message: de.Message, Fields: de.Fields}
	}
	switch {
	case errors.As(err, &mbe):
		return ErrTooLarge
	case errors.Is(err, store.ErrStorageFull):
		return ErrStorageFull
	case errors.Is(err, store.ErrUnavailable):
		return ErrStoreUnavailable
	case errors.Is(err, store.ErrNotFound):
		return Errorf(http.StatusNotFound, string(agent.CodeNotFound), "Not found.")
	case errors.Is(err, store.ErrStale):
		return Errorf(http.StatusConflict, string(agent.CodeStale), "A newer version of this record is already known.")
	case errors.Is(err, store.ErrConflict):
		return Errorf(http.StatusConflict, string(agent.CodeConflict), "That conflicts with something that already exists.")
	case errors.Is(err, store.ErrBadCursor):
		return Errorf(http.StatusBadRequest, "bad_cursor", "The cursor is invalid; start again without one.")
	case errors.Is(err, context.Canceled):
		return Errorf(StatusClientClosed, string(agent.CodeCanceled), "The request was canceled.")
	case errors.Is(err, context.DeadlineExceeded):
		return Errorf(http.StatusServiceUnavailable, "timeout", "The server took too long; try again.")
	}
	return ErrInternal
}

// SetRetryAfter sends e's Retry-After, if it has one.
func SetRetryAfter(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
}
