package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/agentsite/agentsite/handlers/httpkit"
)

// originRule is the node's one Origin rule, for forms, the API, /mcp and
// the chat WebSocket's handshake: Go's CrossOriginProtection
// (Sec-Fetch-Site, else Origin against Host), with the public URL's origin
// trusted as well, since a proxy may rewrite Host. A refusal is the one
// error renderer's 403 cross_origin (the WebSocket answers its own
// bad_origin).
type originRule struct {
	c    *http.CrossOriginProtection
	deny http.Handler
}

func (s *Server) originRule() originRule {
	c := http.NewCrossOriginProtection()
	if u := s.publicURL(); u != nil {
		_ = c.AddTrustedOrigin(browserOrigin(u)) // cannot fail: ParsePublicURL checked scheme and host
	}
	deny := http.HandlerFunc(s.crossOriginDenied)
	c.SetDenyHandler(deny)
	return originRule{c: c, deny: deny}
}

// Handler refuses cross-origin requests with unsafe methods.
func (o originRule) Handler(next http.Handler) http.Handler { return o.c.Handler(next) }

// admits applies the rule to r whatever its method. The MCP spec wants a
// foreign Origin refused on GET too, and so does the chat WebSocket's
// handshake (a GET carrying the session cookie), which
// CrossOriginProtection lets through as safe methods.
func (o originRule) admits(r *http.Request) bool {
	probe := r
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		probe = r.WithContext(r.Context())
		probe.Method = http.MethodPost
	}
	return o.c.Check(probe) == nil
}

// admitAnyMethod is admits that answers a refusal.
func (o originRule) admitAnyMethod(w http.ResponseWriter, r *http.Request) bool {
	if o.admits(r) {
		return true
	}
	o.deny.ServeHTTP(w, r)
	return false
}

// fromOwnPages is stricter than the rule: it admits only a request that
// says it comes from this node's own pages, by its Origin (the request's
// host, or the public URL's origin) or, without one, by Sec-Fetch-Site
// same-origin. A request that says neither (a script, or an old browser)
// is not. The A2A surface takes a session cookie as the caller only then.
func (s *Server) fromOwnPages() func(*http.Request) bool {
	public := ""
	if u := s.publicURL(); u != nil {
		public = browserOrigin(u)
	}
	return func(r *http.Request) bool {
		site := r.Header.Get("Sec-Fetch-Site")
		if site != "" && site != "same-origin" {
			return false
		}
		origin := r.Header.Get("Origin")
		if origin == "" {
			return site == "same-origin"
		}
		if public != "" && origin == public {
			return true
		}
		u, err := url.Parse(origin)
		return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
	}
}

// formsSayWhence refuses a state-changing request to the portal's pages
// that says neither where it comes from (Origin) nor which page sent it
// (Referer). The Origin rule in front has judged the origin of a request
// that says it; it lets one that says nothing through, as a script that
// is not a browser, which is right for the API but not for a form: a
// portal form is sent by a browser from this site's pages, and browsers
// send Origin with a POST (and a same-origin Referer, which the site's
// Referrer-Policy keeps). A Referer alone must be this site's: a page of
// the request's host or of the public URL, or one the browser itself
// says is same-origin (Sec-Fetch-Site, which holds behind a proxy that
// rewrites Host).
func (s *Server) formsSayWhence(next http.Handler) http.Handler {
	public := ""
	if u := s.publicURL(); u != nil {
		public = browserOrigin(u)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Origin") != "" || sameSiteReferer(r, public) {
			next.ServeHTTP(w, r)
			return
		}
		msg := "This form was sent without saying where from (no Origin or Referer header), so it was refused: send it from this site's own pages, in a browser that sends those headers."
		if r.Header.Get("Referer") != "" {
			msg = "This form was sent from a page of another site (its Referer), so it was refused: use this site's own pages."
		}
		s.renderErrorWithSession(w, r, httpkit.Errorf(http.StatusForbidden, codeCrossOrigin, msg))
	})
}

// sameSiteReferer reports whether r's Referer is a page of this site:
// of r's host, of the public URL's origin, or one the browser says is
// same-origin.
func sameSiteReferer(r *http.Request, public string) bool {
	ref := r.Header.Get("Referer")
	if ref == "" {
		return false
	}
	if r.Header.Get("Sec-Fetch-Site") == "same-origin" {
		return true
	}
	u, err := url.Parse(ref)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || public != "" && browserOrigin(u) == public
}

// codeCrossOrigin is the code of the Origin rule's refusals and of a form
// that does not say whence.
const codeCrossOrigin = "cross_origin"

func (s *Server) crossOriginDenied(w http.ResponseWriter, r *http.Request) {
	s.renderErrorWithSession(w, r, httpkit.Errorf(http.StatusForbidden, codeCrossOrigin,
		"Cross-origin requests are refused: use this site's own pages, or a client that is not a browser."))
}

// ParsePublicURL checks a public URL (--public-url): an absolute http or
// https URL of the site's root, such as https://agents.example.org.
func ParsePublicURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("is not a URL: %w", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return nil, errors.New("must start with https:// (or http://)")
	case u.Hostname() == "":
		return nil, errors.New("must name a host")
	case u.User != nil:
		return nil, errors.New("must not carry a user name or password")
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.ForceQuery, u.Fragment != "":
		return nil, errors.New("must be the site's root: no path, query or fragment")
	}
	return u, nil
}

// browserOrigin is the Origin a browser sends from pages under u: the
// host in lower case, without the scheme's default port.
func browserOrigin(u *url.URL) string {
	host := strings.ToLower(u.Host)
	if p := u.Port(); u.Scheme == "https" && p == "443" || u.Scheme == "http" && p == "80" {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return u.Scheme + "://" + host
}

// publicURL is the configured public URL, nil when there is none (New
// has checked it).
func (s *Server) publicURL() *url.URL {
	if s.Config.PublicURL == "" {
		return nil
	}
	u, err := ParsePublicURL(s.Config.PublicURL)
	if err != nil {
		return nil
	}
	return u
}
