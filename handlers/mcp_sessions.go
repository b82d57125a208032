package handlers

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"
)

// mcpSessionPrefix marks the session ids of the public /mcp endpoint.
const mcpSessionPrefix = "mcp-"

var errUnknownMCPSession = errors.New("unknown MCP session")

// mcpSessions issues and checks the Mcp-Session-Id of public MCP clients
// (mcp-go's server.SessionIdManager). Ids are 128 random bits: a session id
// is what owns an MCP client's conversations ("mcp:<id>"). Mcp-go's own
// stateful manager remembers every terminated id forever and never expires
// idle ones; this one forgets sessions idle for ttl (the client then gets
// 404 and initializes again, as the spec says) and keeps at most max.
type mcpSessions struct {
	mu    sync.Mutex
	ttl   time.Duration
	max   int
	now   func() time.Time
	last  map[string]time.Time // session id → last use
	swept time.Time
}

func newMCPSessions(ttl time.Duration, max int, now func() time.Time) *mcpSessions {
	return &mcpSessions{ttl: ttl, max: max, now: now, last: map[string]time.Time{}}
}

// Generate starts a session. When max sessions are live, the least
// recently used one is marked expired; the next sweep ends it.
func (m *mcpSessions) Generate() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	id := mcpSessionPrefix + hex.EncodeToString(b)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.last) >= m.max {
		oldest, at := "", now
		for k, t := range m.last {
			if t.Before(at) {
				oldest, at = k, t
			}
		}
		if oldest != "" {
			m.last[oldest] = time.Time{}
		}
	}
	m.last[id] = now
	return id
}

// Validate accepts a live session and records its use. An expired one is
// reported terminated, an unknown one invalid: both get 404.
func (m *mcpSessions) Validate(id string) (isTerminated bool, err error) {
	if !strings.HasPrefix(id, mcpSessionPrefix) {
		return false, errUnknownMCPSession
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.last[id]
	switch {
	case !ok:
		return false, errUnknownMCPSession
	case now.Sub(t) > m.ttl:
		return true, nil
	}
	m.last[id] = now
	return false, nil
}

// Terminate ends a session (a client's DELETE, or expiry).
func (m *mcpSessions) Terminate(id string) (isNotAllowed bool, err error) {
	m.mu.Lock()
	delete(m.last, id)
	m.mu.Unlock()
	return false, nil
}

// sweep forgets the sessions idle past ttl, at most once per ttl/10, and
// returns them so their per-session state in mcp-go can be released.
// Between sweeps Validate refuses them anyway.
func (m *mcpSessions) sweep() []string {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.Sub(m.swept) < m.ttl/10 {
		return nil
	}
	m.swept = now
	var out []string
	for id, t := range m.last {
		if now.Sub(t) > m.ttl {
			out = append(out, id)
			delete(m.last, id)
		}
	}
	return out
}

// count is the number of sessions held (tests, metrics).
func (m *mcpSessions) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.last)
}
