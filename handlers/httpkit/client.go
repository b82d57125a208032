package httpkit

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/agentsite/agentsite/handlers/connlimit"
)

// ClientIP resolves who the client is: the TCP peer, or, behind the
// operator's reverse proxies (trusted CIDRs), the first address in
// X-Forwarded-For that is not one of them (chi's ClientIPFrom*).
func ClientIP(trustedProxies []string) func(http.Handler) http.Handler {
	if len(trustedProxies) > 0 {
		return middleware.ClientIPFromXFF(trustedProxies...)
	}
	return middleware.ClientIPFromRemoteAddr
}

// ClientKey is the budget key of the request's client for every rate limit
// and cap: its IP, or its IPv6 /64 (connlimit.Key).
func ClientKey(r *http.Request) string {
	if a := middleware.GetClientIPAddr(r.Context()); a.IsValid() {
		return connlimit.Key(a)
	}
	return connlimit.KeyOf(r.RemoteAddr)
}

// ClientKeyFunc is ClientKey for httprate.
func ClientKeyFunc(r *http.Request) (string, error) { return ClientKey(r), nil }

// Origin is the origin URLs for clients start with: the configured public
// one (--public-url, as scheme://host) when set, else the scheme and host
// the request came in on.
func Origin(r *http.Request, public string) string {
	if public != "" {
		return strings.TrimRight(public, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
