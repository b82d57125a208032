package mcpstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// flushCountKey carries a request's *atomic.Int64 count of SSE flushes.
type flushCountKey struct{}

// flushWriter gives mcp-go an http.Flusher (it streams SSE only when the
// writer is one) through the middleware's wrappers, which expose Unwrap,
// and counts flushes: mcp-go flushes once per notification it writes.
type flushWriter struct {
	http.ResponseWriter
	flushed *atomic.Int64
}

func (f flushWriter) Flush() {
	_ = http.NewResponseController(f.ResponseWriter).Flush()
	f.flushed.Add(1)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (f flushWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// CountFlushes wraps the writer and request handed to mcp-go's Streamable
// HTTP server, so that Streams made in its tool handlers can Drain.
func CountFlushes(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	flushed := new(atomic.Int64)
	r = r.WithContext(context.WithValue(r.Context(), flushCountKey{}, flushed))
	return flushWriter{ResponseWriter: w, flushed: flushed}, r
}

// ReadBody reads a POST body of at most maxBody bytes, or answers the
// request (413, or 400 when it cannot be read) and returns false. Mcp-go
// reads the whole body anyway; reading it first lets an oversized chunked
// body get a 413 instead of a parse error.
func ReadBody(w http.ResponseWriter, r *http.Request, maxBody int64) ([]byte, bool) {
	if r.ContentLength > maxBody {
		WriteError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST, "Request body too large.")
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		WriteError(w, http.StatusBadRequest, nil, mcp.PARSE_ERROR, "Could not read the request body.")
		return nil, false
	}
	if int64(len(body)) > maxBody {
		WriteError(w, http.StatusRequestEntityTooLarge, nil, mcp.INVALID_REQUEST, "Request body too large.")
		return nil, false
	}
	return body, true
}

// WriteError answers with an HTTP status and a JSON-RPC error, as the MCP
// transport spec suggests for refused requests; id is the request's id,
// or nil when unknown.
func WriteError(w http.ResponseWriter, status int, id any, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": code, "message": message},
	})
}
