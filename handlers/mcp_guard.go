package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/go-chi/httprate"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent/runtime/mcpstream"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// mcpGuard wraps mcp-go's Streamable HTTP server with what it does not do
// by default: a body cap, and (front) the checks and session bookkeeping
// below.
type mcpGuard struct {
	next    http.Handler
	maxBody int64
	front   *mcpFront
}

// mcpFront is what the public /mcp endpoint checks before mcp-go sees a
// request.
type mcpFront struct {
	origins    originRule
	publicHost string // the host of --public-url; "" when unset
	sessions   *mcpSessions
	// inits limits new sessions per client IP (IPv6: per /64), so one
	// client cannot cycle the whole session table.
	inits *httprate.RateLimiter
}

func (g *mcpGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.front != nil && !g.front.admit(w, r) {
		return
	}
	if r.Method == http.MethodPost {
		body, ok := mcpstream.ReadBody(w, r, g.maxBody)
		if !ok {
			return
		}
		if g.front != nil && !g.front.admitMessage(w, r, body) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	} else if g.front != nil && r.Method == http.MethodDelete && !g.front.admitDelete(w, r) {
		return
	}
	if g.front != nil {
		defer g.releaseEnded(r.Context())
	}
	g.next.ServeHTTP(mcpstream.CountFlushes(w, r))
}

// releaseEnded makes mcp-go forget the sessions ended since the last
// request (evicted or expired): their registration and per-session state
// go the way a client's DELETE would take them. It runs after the request,
// so an initialize that evicted a session releases it at once.
func (g *mcpGuard) releaseEnded(ctx context.Context) {
	for _, id := range g.front.sessions.release() {
		req, err := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodDelete, "/mcp", nil)
		if err != nil {
			continue
		}
		req.Header.Set(server.HeaderKeySessionID, id)
		g.next.ServeHTTP(&discardWriter{h: http.Header{}}, req)
	}
}

// admit applies the Origin rule (to every method, as the MCP spec wants)
// and the DNS-rebinding rule.
func (f *mcpFront) admit(w http.ResponseWriter, r *http.Request) bool {
	if !f.origins.admitAnyMethod(w, r) {
		return false
	}
	if !f.hostAllowed(r) {
		mcpstream.WriteError(w, http.StatusForbidden, nil, mcp.INVALID_REQUEST, "Forbidden: this server does not answer to the host name "+r.Host+".")
		return false
	}
	return true
}

// hostAllowed is mcp-go's DNS-rebinding rule with the operator's public
// host added. A page on a rebound name (evil.example resolving to
// 127.0.0.1) reaches a loopback listener with that name in Host, and is
// refused; a reverse proxy on the same host that keeps Host sends the
// public name, which mcp-go's rule (all or nothing) would refuse too.
func (f *mcpFront) hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopbackHost(local.String()) {
		return true // rebinding only reaches servers on loopback
	}
	return isLoopbackHost(r.Host) || f.publicHost != "" && strings.EqualFold(hostOnly(r.Host), f.publicHost)
}

// mcpMessage is what the guard reads of a POSTed JSON-RPC message.
type mcpMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta *mcp.Meta `json:"_meta"`
	} `json:"params"`
}

// admitMessage checks a POSTed message of the session era (before
// 2026-07-28, whose requests carry no session): an initialize is counted
// against its IP's budget, and any other request needs its session id
// (400 without one, as the transport spec says; mcp-go would say 404).
func (f *mcpFront) admitMessage(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var msg mcpMessage
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return true // a batch, a response or garbage: mcp-go answers it
	}
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion()) {
		return true
	}
	var id any
	_ = json.Unmarshal(msg.ID, &id)
	if msg.Method == string(mcp.MethodInitialize) {
		if f.inits.OnLimit(w, r, httpkit.ClientKey(r)) { // sets Retry-After
			mcpstream.WriteError(w, http.StatusTooManyRequests, id, mcp.INVALID_REQUEST,
				"Too many new MCP sessions from your address; wait a minute and try again, or keep using your session.")
			return false
		}
		return true
	}
	if r.Header.Get(server.HeaderKeySessionID) == "" {
		mcpstream.WriteError(w, http.StatusBadRequest, id, mcp.INVALID_REQUEST, "Bad Request: the Mcp-Session-Id header is required; send initialize first.")
		return false
	}
	return true
}

// admitDelete refuses a session-era DELETE without a session id.
func (f *mcpFront) admitDelete(w http.ResponseWriter, r *http.Request) bool {
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || r.Header.Get(server.HeaderKeySessionID) != "" {
		return true
	}
	mcpstream.WriteError(w, http.StatusBadRequest, nil, mcp.INVALID_REQUEST, "Bad Request: the Mcp-Session-Id header is required.")
	return false
}

// isLoopbackHost reports whether a host or host:port is localhost or a
// loopback address (mcp-go's rule, which it does not export).
func isLoopbackHost(addr string) bool {
	host := hostOnly(addr)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostOnly drops the port of a host:port, and the brackets of an IPv6
// address.
func hostOnly(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return strings.Trim(addr, "[]")
}

// discardWriter is the response writer of internal requests.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}
