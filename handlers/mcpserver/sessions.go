package mcpserver

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"
)

// sessionPrefix marks the session ids of the public /mcp endpoint.
const sessionPrefix = "mcp-"

var errUnknownSession = errors.New("unknown MCP session")

// sessionTable issues and checks the Mcp-Session-Id of public MCP clients
// (mcp-go's server.SessionIdManager). Ids are 128 random bits: a session id
// is what owns an MCP client's conversations ("mcp:<id>"). Mcp-go's own
// stateful manager remembers every terminated id forever and never expires
// idle ones; this one forgets sessions idle for ttl (the client then gets
// 404 and initializes again, as the spec says) and holds at most max: a new
// session evicts the least recently used one. Each session costs about
// 10 KB in mcp-go (measured), so the cap is what bounds the memory anonymous
// clients can make the node hold.
type sessionTable struct {
	mu   sync.Mutex
	ttl  time.Duration
	max  int
	now  func() time.Time
	lru  *list.List               // of *session, most recently used first
	byID map[string]*list.Element // session id → its element in lru
	// ended are sessions forgotten here (evicted or expired) whose state
	// in mcp-go is still to be released (see release).
	ended []string
}

type session struct {
	id   string
	last time.Time
}

func newSessionTable(ttl time.Duration, max int, now func() time.Time) *sessionTable {
	return &sessionTable{ttl: ttl, max: max, now: now, lru: list.New(), byID: map[string]*list.Element{}}
}

// Generate starts a session, evicting the least recently used ones beyond
// max.
func (m *sessionTable) Generate() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	id := sessionPrefix + hex.EncodeToString(b)
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byID[id] = m.lru.PushFront(&session{id: id, last: now})
	for m.lru.Len() > m.max {
		m.end(m.lru.Back())
	}
	return id
}

// Validate accepts a live session and records its use. An expired one is
// reported terminated, an unknown (or evicted) one invalid: both get 404.
func (m *sessionTable) Validate(id string) (isTerminated bool, err error) {
	if !strings.HasPrefix(id, sessionPrefix) {
		return false, errUnknownSession
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byID[id]
	if !ok {
		return false, errUnknownSession
	}
	s := e.Value.(*session)
	if now.Sub(s.last) > m.ttl {
		m.end(e)
		return true, nil
	}
	s.last = now
	m.lru.MoveToFront(e)
	return false, nil
}

// Terminate ends a session (a client's DELETE, or the release of one ended
// here): mcp-go releases its state itself afterwards.
func (m *sessionTable) Terminate(id string) (isNotAllowed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byID[id]; ok {
		m.lru.Remove(e)
		delete(m.byID, id)
	}
	return false, nil
}

// end forgets a session and queues it for release. The caller holds mu.
func (m *sessionTable) end(e *list.Element) {
	s := m.lru.Remove(e).(*session)
	delete(m.byID, s.id)
	m.ended = append(m.ended, s.id)
}

// release forgets the sessions idle past ttl and returns every session
// ended since the last call, so that their state in mcp-go is released.
// Idle sessions sit at the back of the list, so this costs one step per
// session ended.
func (m *sessionTable) release() []string {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for e := m.lru.Back(); e != nil && now.Sub(e.Value.(*session).last) > m.ttl; e = m.lru.Back() {
		m.end(e)
	}
	out := m.ended
	m.ended = nil
	return out
}

// registered is called when mcp-go registers a session, at the end of its
// initialize request. A session evicted while that request ran was
// released before mcp-go held anything for it; queue it again.
func (m *sessionTable) registered(id string) {
	if !strings.HasPrefix(id, sessionPrefix) {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[id]; !ok {
		m.ended = append(m.ended, id)
	}
}

// count is the number of sessions held (tests, metrics).
func (m *sessionTable) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lru.Len()
}
