package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// GuardOptions configures NewGuardedClientWithOptions.
type GuardOptions struct {
	// Policy is what the client may reach besides the public internet:
	// the policy of the purpose it serves (Outbound.Policy). Multicast,
	// unspecified, cloud metadata and the other special ranges stay
	// refused whatever it says.
	Policy Policy
	// Timeout bounds a whole request, body included; 0 means none (the
	// caller's context then bounds it).
	Timeout time.Duration
	// Resolver replaces net.DefaultResolver; tests use it to make a name
	// resolve to loopback.
	Resolver *net.Resolver
}

// Limits of the guarded client.
const (
	maxRedirects          = 3
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	defaultHeaderTimeout  = 60 * time.Second
	maxResponseHeaderSize = 64 << 10
)

// NewGuardedClient returns the guarded HTTP client, the only kind the node
// dials out with. It refuses to connect to non-public addresses (CheckAddr;
// allowPrivate admits the operator's own networks), checked on the resolved
// IP right before connect(2), so neither DNS names that resolve to private
// space nor redirects get around it. timeout bounds each request, body
// included. NewPurposeClient gives the client of one purpose.
func NewGuardedClient(allowPrivate bool, timeout time.Duration) *http.Client {
	return NewGuardedClientWithOptions(GuardOptions{Policy: Policy{Private: allowPrivate}, Timeout: timeout})
}

// NewPurposeClient is the guarded client of purpose p under the operator's
// outbound policy o.
func NewPurposeClient(o Outbound, p Purpose, timeout time.Duration) *http.Client {
	return NewGuardedClientWithOptions(GuardOptions{Policy: o.Policy(p), Timeout: timeout})
}

// NewGuardedClientWithOptions is NewGuardedClient with every option.
func NewGuardedClientWithOptions(o GuardOptions) *http.Client {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second, Resolver: o.Resolver,
		Control: func(_, address string, _ syscall.RawConn) error { return checkDialAddr(address, o.Policy) }}
	headerTimeout := defaultHeaderTimeout
	if o.Timeout > 0 {
		headerTimeout = o.Timeout
	}
	tr := &http.Transport{
		Proxy:                  nil, // never HTTP(S)_PROXY: a proxy would dial for us, past the guard
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    tlsHandshakeTimeout,
		ResponseHeaderTimeout:  headerTimeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: maxResponseHeaderSize,
	}
	return &http.Client{Transport: tr, Timeout: o.Timeout, CheckRedirect: checkRedirect}
}

// checkDialAddr is the dialer's Control hook: address is the resolved
// IP:port about to be connected, after DNS and on every redirect.
func checkDialAddr(address string, p Policy) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot check %q", agent.ErrBlockedAddress, address)
	}
	if err := p.CheckAddrPort(ap); err != nil {
		return fmt.Errorf("%w: %w", agent.ErrBlockedAddress, err)
	}
	return nil
}

// errTooManyRedirects and errBadRedirect are returned through CheckRedirect.
var (
	errTooManyRedirects = fmt.Errorf("%w: more than %d redirects", agent.ErrBadBackendReply, maxRedirects)
	errBadRedirect      = fmt.Errorf("%w: redirect to a non-HTTP URL", agent.ErrBlockedAddress)
	// errBadBackendURL is a configuration mistake that Backend.Validate
	// normally catches; like a private address, the operator must fix it.
	errBadBackendURL = fmt.Errorf("%w: the backend URL is not a usable http(s) URL", agent.ErrBlockedAddress)
)

// checkRedirect follows at most maxRedirects http(s) redirects; the dialer
// checks each target's address again.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return errTooManyRedirects
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return errBadRedirect
	}
	return nil
}

// capReader reads at most n bytes from r and fails with ErrReplyTooLarge
// if there is more, rather than ending silently like io.LimitReader.
type capReader struct {
	r     io.Reader
	n     int64
	limit int64
	onHit func()
}

func newCapReader(r io.Reader, limit int64, onHit func()) *capReader {
	return &capReader{r: r, n: limit, limit: limit, onHit: onHit}
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		var one [1]byte
		k, err := c.r.Read(one[:])
		if k > 0 {
			if c.onHit != nil {
				c.onHit()
			}
			return 0, fmt.Errorf("%w: more than %d bytes", agent.ErrReplyTooLarge, c.limit)
		}
		return 0, err
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

// capReadCloser is a capReader that closes the underlying body.
type capReadCloser struct {
	*capReader
	io.Closer
}

// isNetTimeout reports a timeout of the network or http.Client.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// postJSON sends v as JSON to url through the guarded client, with the
// runtime's User-Agent and, if key is set, a bearer token. A status other
// than 2xx is a classified error of backend kind (its body closed); the
// caller closes the body of a 2xx response.
func (r *Runtime) postJSON(ctx context.Context, kind, url, accept, key string, v any) (*http.Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	req, err := r.newRequest(ctx, http.MethodPost, url, accept, key, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return nil, statusError(kind, resp, key)
	}
	return resp, nil
}

// newRequest is a request to a backend URL with the runtime's User-Agent,
// the Accept type and, if key is set, the key as a bearer token.
func (r *Runtime) newRequest(ctx context.Context, method, url, accept, key string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, errBadBackendURL
	}
	req.Header.Set("Accept", accept)
	req.Header.Set("User-Agent", r.opts.UserAgent)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return req, nil
}
