package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentsite/agentsite/agent"
)

// BackendError is a classified backend failure. errors.Is matches its Kind
// (one of the sentinels above) and its cause. Its text never contains the
// backend's API key, and it ends in ": " + Public, so a caller that shows
// the last segment shows a safe summary.
type BackendError struct {
	Kind       error         // one of the Err* sentinels
	Backend    string        // backend kind: builtin, llm, mcp, webhook, a2a
	Status     int           // upstream HTTP status, if any
	RetryAfter time.Duration // from a 429's Retry-After, if any
	Upstream   string        // what the upstream said, sanitized, for logs
	Public     string        // short summary safe to show a person
	// Owner is the failure as the agent's owner is told it, who can fix
	// it: where (host and port) and what to check (ownerText); "" when
	// Public says all. Never a key, a path or a query.
	Owner string
	Err   error // underlying cause, if any
}

func (e *BackendError) Error() string {
	var b strings.Builder
	b.WriteString(e.Backend)
	b.WriteString(" backend: ")
	kind := e.Kind.Error()
	if e.Err == nil {
		b.WriteString(kind)
	} else if cause := e.Err.Error(); strings.HasPrefix(cause, kind) {
		b.WriteString(cause) // the cause already names the kind
	} else {
		b.WriteString(kind + " (" + cause + ")")
	}
	if e.Upstream != "" {
		fmt.Fprintf(&b, " (upstream said %q)", e.Upstream)
	}
	if e.Public != "" {
		b.WriteString(": ")
		b.WriteString(e.Public)
	}
	return b.String()
}

// Unwrap lets errors.Is match both the kind and the cause.
func (e *BackendError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// PublicMessage is the part of a Runtime error that is safe to show a
// person ("rate limited upstream, retry after 30s"), or "" if err carries
// none.
func PublicMessage(err error) string {
	var be *BackendError
	if errors.As(err, &be) {
		return be.Public
	}
	return ""
}

// kindError builds a BackendError of kind with a public summary.
func kindError(kind error, backend, public string) *BackendError {
	return &BackendError{Kind: kind, Backend: backend, Public: public}
}

// maxErrorBody bounds how much of a non-2xx body is read for its message.
const maxErrorBody = 8 << 10

// statusError classifies a non-2xx response and closes nothing: the caller
// owns resp.Body. key is redacted from what the upstream said.
func statusError(backend string, resp *http.Response, key string) *BackendError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	code := resp.StatusCode
	e := &BackendError{Backend: backend, Status: code, Upstream: sanitize(upstreamMessage(body), key)}
	switch {
	case code == http.StatusTooManyRequests:
		e.Kind = agent.ErrBackendRejected
		e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		e.Public = "rate limited upstream (HTTP 429)"
		if e.RetryAfter > 0 {
			e.Public += ", retry after " + e.RetryAfter.String()
		}
	case code >= 500:
		e.Kind = agent.ErrBackendUnavailable
		e.Public = fmt.Sprintf("HTTP %d %s from the backend", code, http.StatusText(code))
	case code >= 400:
		e.Kind = agent.ErrBackendRejected
		e.Public = fmt.Sprintf("HTTP %d %s", code, http.StatusText(code))
	default:
		e.Kind = agent.ErrBadBackendReply
		e.Public = fmt.Sprintf("unexpected HTTP %d", code)
	}
	return e
}

// parseRetryAfter reads delay-seconds or an HTTP-date (RFC 9110 10.2.3),
// rounded to whole seconds; 0 if absent, invalid or past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 32); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now).Round(time.Second)
	}
	return 0
}

// upstreamMessage extracts the human part of an error body: the common
// JSON shapes ({"error":{"message"}}, {"error":"..."}, {"message"}), else
// the text itself.
func upstreamMessage(body []byte) string {
	var j struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		Detail  string `json:"detail"`
	}
	if json.Unmarshal(body, &j) == nil {
		switch e := j.Error.(type) {
		case string:
			return e
		case map[string]any:
			if m, ok := e["message"].(string); ok {
				return m
			}
		}
		if j.Message != "" {
			return j.Message
		}
		if j.Detail != "" {
			return j.Detail
		}
	}
	return string(body)
}

// keyLike matches tokens shaped like API keys, including the masked echo
// some providers put in their 401 messages ("sk-ab***yz").
var keyLike = regexp.MustCompile(`\b(?:sk|pk|rk|ak|key|token)[-_][A-Za-z0-9_*.\-]{6,}`)

// maxUpstreamRunes bounds the upstream text kept in an error.
const maxUpstreamRunes = 200

// sanitize makes upstream text fit for an error or a log line: the API key
// and key-like tokens redacted, control characters and runs of space
// collapsed, valid UTF-8, bounded.
func sanitize(s, key string) string {
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = keyLike.ReplaceAllString(s, "[redacted]")
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	if utf8.RuneCountInString(s) > maxUpstreamRunes {
		s = string([]rune(s)[:maxUpstreamRunes-1]) + "…"
	}
	return s
}

// redactedError hides the API key from an error's text while keeping the
// chain for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact returns err, or a wrapper whose text has key replaced, if the key
// appears in it (belt and braces: no code path puts it there on purpose).
func redact(err error, key string) error {
	if err == nil || key == "" || !strings.Contains(err.Error(), key) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), key, "[redacted]"), err: err}
}

// emitError marks a failure of the caller's emit, which is the caller's to
// interpret, not the backend's.
type emitError struct{ err error }

func (e *emitError) Error() string { return "emit: " + e.err.Error() }
func (e *emitError) Unwrap() error { return e.err }
