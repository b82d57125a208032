package mcpserver

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

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/mcpkit/mcpstream"
)

// guard wraps mcp-go's Streamable HTTP server with what it does not do by
// default: the Origin and Host checks, a body cap, the session rules below
// and the release of ended sessions.
type guard struct {
	next       http.Handler
	admitOrig  func(http.ResponseWriter, *http.Request) bool // Server.AdmitOrigin
	publicHost string                                        // the host of --public-url; "" when unset
	sessions   *sessionTable
	// inits limits new sessions per client IP (IPv6: per /64), so one
	// client cannot cycle the whole session table.
	inits *httprate.RateLimiter
	// subs are the sessions' resource subscriptions, kept here (mcp-go
	// only acknowledges them) so that a subscription over the limits is
	// refused with a reason, and ends with its session.
	subs *subscriptions
	p    *public
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.admit(w, r) {
		return
	}
	switch r.Method {
	case http.MethodPost:
		body, ok := mcpstream.ReadBody(w, r, MaxBodyBytes)
		if !ok || !g.admitMessage(w, r, body) || !g.subscription(w, r, body) {
			return
		}
		g.pollSubscriptions(r)
		r.Body = io.NopCloser(bytes.NewReader(withoutListenedResources(body)))
	case http.MethodDelete:
		if !g.admitDelete(w, r) {
			return
		}
		g.subs.end(r.Header.Get(server.HeaderKeySessionID))
	}
	defer g.releaseEnded(r.Context())
	g.next.ServeHTTP(mcpstream.CountFlushes(w, r))
}

// releaseEnded makes mcp-go forget the sessions ended since the last
// request (evicted or expired): their registration and per-session state
// go the way a client's DELETE would take them. It runs after the request,
// so an initialize that evicted a session releases it at once.
func (g *guard) releaseEnded(ctx context.Context) {
	for _, id := range g.sessions.release() {
		g.subs.end(id)
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
func (g *guard) admit(w http.ResponseWriter, r *http.Request) bool {
	if !g.admitOrig(w, r) {
		return false
	}
	if !g.hostAllowed(r) {
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
func (g *guard) hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopbackHost(local.String()) {
		return true // rebinding only reaches servers on loopback
	}
	return isLoopbackHost(r.Host) || g.publicHost != "" && strings.EqualFold(hostOnly(r.Host), g.publicHost)
}

// message is what the guard reads of a POSTed JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Meta *mcp.Meta `json:"_meta"`
		URI  string    `json:"uri"`
	} `json:"params"`
}

// admitMessage checks a POSTed message of the session era (before
// 2026-07-28, whose requests carry no session): an initialize is counted
// against its IP's budget, and any other request needs its session id
// (400 without one, as the transport spec says; mcp-go would say 404).
func (g *guard) admitMessage(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var msg message
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		return true // a batch, a response or garbage: mcp-go answers it
	}
	if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(msg.Params.Meta.ProtocolVersion()) {
		return true
	}
	var id any
	_ = json.Unmarshal(msg.ID, &id)
	if msg.Method == string(mcp.MethodInitialize) {
		if g.inits.OnLimit(w, r, httpkit.ClientKey(r)) { // sets Retry-After
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

// subscription keeps the table of a session's resources/subscribe and
// resources/unsubscribe before mcp-go acknowledges them: only agents'
// resources can be watched, within the limits; a refusal is the request's
// error.
func (g *guard) subscription(w http.ResponseWriter, r *http.Request, body []byte) bool {
	if !bytes.Contains(body, []byte("subscribe")) {
		return true
	}
	var msg message
	if json.Unmarshal(body, &msg) != nil {
		return true
	}
	sub := msg.Method == string(mcp.MethodResourcesSubscribe)
	if !sub && msg.Method != string(mcp.MethodResourcesUnsubscribe) {
		return true
	}
	session := r.Header.Get(server.HeaderKeySessionID)
	if session == "" {
		return true // the modern era's subscriptions/listen: mcp-go's
	}
	if !sub {
		g.subs.remove(session, msg.Params.URI)
		return true
	}
	var id any
	_ = json.Unmarshal(msg.ID, &id)
	refuse := func(code int, text string) bool {
		mcpstream.WriteError(w, http.StatusOK, id, code, text)
		return false
	}
	agentID, ok := agentIDOf(msg.Params.URI)
	if !ok {
		return refuse(mcp.INVALID_PARAMS, "Only an agent's resource (agentsite://agents/{id}) can be subscribed to.")
	}
	l, err := g.p.s.Registry.Find(r.Context(), agentID)
	switch {
	case isGone(err):
		return refuse(mcp.RESOURCE_NOT_FOUND, "No agent "+agentID+" on this node or the network: check the id (search_agents).")
	case err != nil:
		return refuse(mcp.INTERNAL_ERROR, g.p.readError(r.Context(), msg.Params.URI, err).Error())
	}
	if err := g.subs.add(session, msg.Params.URI, fingerprint(l)); err != nil {
		g.p.s.Logger.InfoContext(r.Context(), "MCP subscription refused", "uri", msg.Params.URI, "err", err)
		return refuse(mcp.INVALID_REQUEST, err.Error())
	}
	return true
}

// pollSubscriptions looks at the listings the session watches, when due,
// and queues notifications/resources/updated for each that changed:
// mcp-go sends them in this request's response, before its result.
func (g *guard) pollSubscriptions(r *http.Request) {
	session := r.Header.Get(server.HeaderKeySessionID)
	if session == "" {
		return
	}
	for uri, was := range g.subs.due(session) {
		id, _ := agentIDOf(uri)
		fp := ""
		l, err := g.p.s.Registry.Find(r.Context(), id)
		switch {
		case err == nil:
			fp = fingerprint(l)
		case !isGone(err):
			continue // try again at the next poll
		}
		if fp == was {
			continue
		}
		// A notification that does not fit in the session's queue is
		// tried again at the next poll.
		if g.p.srv.SendNotificationToSpecificClient(session, string(mcp.MethodNotificationResourceUpdated), map[string]any{"uri": uri}) == nil {
			g.subs.seenNow(session, uri, fp)
		}
	}
}

// withoutListenedResources drops the resource URIs of a subscriptions/listen
// (the sessionless era's way to subscribe): mcp-go would hold that
// request's stream open for as long as the client likes, and this node
// keeps no long-lived streams. What else it asks is answered as before
// (nothing to listen to: the stream closes at once). Resource
// subscriptions are a session's (resources/subscribe).
func withoutListenedResources(body []byte) []byte {
	// The cheap look first; a key spelled with escapes is looked at in full.
	if !bytes.Contains(body, []byte("resourceSubscriptions")) && !bytes.Contains(body, []byte(`\u`)) {
		return body
	}
	var msg map[string]json.RawMessage
	var method string
	if json.Unmarshal(body, &msg) != nil || json.Unmarshal(msg["method"], &method) != nil || method != string(mcp.MethodSubscriptionsListen) {
		return body
	}
	var params map[string]json.RawMessage
	var filter map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil || json.Unmarshal(params["notifications"], &filter) != nil {
		return body
	}
	if _, ok := filter["resourceSubscriptions"]; !ok {
		return body
	}
	delete(filter, "resourceSubscriptions")
	var err error
	if params["notifications"], err = json.Marshal(filter); err != nil {
		return body
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return body
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	return out
}

// admitDelete refuses a session-era DELETE without a session id.
func (g *guard) admitDelete(w http.ResponseWriter, r *http.Request) bool {
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
