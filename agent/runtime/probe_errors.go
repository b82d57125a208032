package runtime

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// explainProbe classifies a failed probe like a turn (Runtime.classify),
// then rewrites its public part for the agent's owner, who can fix it
// (ownerText).
func (r *Runtime) explainProbe(parent, probe context.Context, b agent.Backend, err error, limit time.Duration) error {
	err = r.classify(parent, probe, b, err)
	var be *BackendError
	if !errors.As(err, &be) {
		return err // canceled by the caller
	}
	e := *be
	if m := ownerText(b, &e, limit); m != "" {
		e.Public = m
	}
	return &e
}

// ownerText is what e means to the owner of backend b, who can fix it:
// what went wrong, where (host and port only, never a path, query or
// key) and what to check; "" when there is no more to say than e.Public.
// limit is the time the call had (0: not known).
func ownerText(b agent.Backend, e *BackendError, limit time.Duration) string {
	noun := probeNoun(b.Kind)
	switch {
	case e.Kind == agent.ErrBackendTimeout && limit > 0:
		return "timed out after " + limit.Round(time.Millisecond).String()
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		hint := "check the key"
		if b.Kind == agent.BackendA2A {
			hint = "the card must be readable without a key"
		}
		return fmt.Sprintf("%d from the %s: %s", e.Status, noun, hint)
	case e.Status == http.StatusNotFound || e.Status == http.StatusGone:
		return fmt.Sprintf("%d from the %s: check the URL", e.Status, noun)
	case e.Status == http.StatusTooManyRequests:
		return e.Public + " from the " + noun
	case e.Status != 0:
		return fmt.Sprintf("HTTP %d %s from the %s", e.Status, http.StatusText(e.Status), noun)
	case e.Kind == agent.ErrBackendUnavailable:
		return netProblem(e.Err, hostPort(b.URL))
	}
	return ""
}

// probeNoun names what a probe of kind asked.
func probeNoun(kind string) string {
	switch kind {
	case agent.BackendLLM:
		return "model endpoint"
	case agent.BackendMCP:
		return "MCP server"
	case agent.BackendA2A:
		return "agent card URL"
	}
	return kind
}

// netProblem says what failed on the way to where (host:port), or "" if
// err is none of the failures an owner can recognise.
func netProblem(err error, where string) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused at " + where
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no such host: " + dnsErr.Name
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to " + where
	case errors.As(err, &certErr):
		return "the TLS certificate of " + where + " is not valid"
	case errors.As(err, &recErr):
		return where + " does not speak TLS: check http:// or https://"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection to " + where + " was closed before an answer"
	}
	return ""
}

// hostPort is the host and port a backend URL connects to; never its path,
// query or credentials.
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return "the backend"
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
