package mcpserver

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agentsite/agentsite/store"
)

// Defaults of the subscription limits (Limits).
const (
	// SubscriptionsPerSession: listings one session may watch at once.
	SubscriptionsPerSession = 16
	// MaxSubscriptions: listings watched over all sessions.
	MaxSubscriptions = 10_000
	// SubscriptionPoll: how often a session's listings are looked at
	// again, at most; they are looked at when the session sends a request.
	SubscriptionPoll = time.Second
)

var (
	errSessionSubscriptions = fmt.Errorf("this session already watches %d resources (the most one session may); unsubscribe from one first", SubscriptionsPerSession)
	errNodeSubscriptions    = errors.New("this node watches as many resources as it can for its MCP clients; try again later")
)

// subscriptions are what each session's resources/subscribe asked to
// watch, with each listing as it was last seen. The node keeps no
// standalone stream open (WithDisableStreaming): a session's listings are
// looked at again when it sends a request (at most once per poll), and a
// change is sent as notifications/resources/updated in that request's
// response. A subscription ends with its session.
type subscriptions struct {
	mu         sync.Mutex
	perSession int
	max        int
	poll       time.Duration
	now        func() time.Time
	n          int // subscriptions held, over all sessions
	bySession  map[string]*watch
}

type watch struct {
	checked time.Time
	seen    map[string]string // URI → the listing's fingerprint
}

func newSubscriptions(perSession, max int, poll time.Duration, now func() time.Time) *subscriptions {
	return &subscriptions{perSession: perSession, max: max, poll: poll, now: now, bySession: map[string]*watch{}}
}

// fingerprint is what of a listing, when it changes, makes its resource
// change: a new record, its status, its health. "" is no listing.
func fingerprint(l store.Listing) string {
	return fmt.Sprintf("%d|%t|%s|%s|%s", l.Record.Seq, l.Record.Tombstone, l.Status, l.Health.State, l.HostPeerID)
}

// add watches uri for session, the listing being fp now. Subscribing to
// a URI watched already changes nothing.
func (t *subscriptions) add(session, uri, fp string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.bySession[session]
	if w != nil {
		if _, ok := w.seen[uri]; ok {
			return nil
		}
		if len(w.seen) >= t.perSession {
			return errSessionSubscriptions
		}
	}
	if t.n >= t.max {
		return errNodeSubscriptions
	}
	if w == nil {
		w = &watch{checked: t.now(), seen: map[string]string{}}
		t.bySession[session] = w
	}
	w.seen[uri] = fp
	t.n++
	return nil
}

func (t *subscriptions) remove(session, uri string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.bySession[session]
	if w == nil {
		return
	}
	if _, ok := w.seen[uri]; ok {
		delete(w.seen, uri)
		t.n--
	}
	if len(w.seen) == 0 {
		delete(t.bySession, session)
	}
}

// end drops a session's subscriptions (the session ended).
func (t *subscriptions) end(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.bySession[session]; w != nil {
		t.n -= len(w.seen)
		delete(t.bySession, session)
	}
}

// due returns a copy of session's watched URIs and fingerprints when they
// are to be looked at again (nil otherwise), and counts them looked at.
func (t *subscriptions) due(session string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	w := t.bySession[session]
	if w == nil {
		return nil
	}
	now := t.now()
	if now.Sub(w.checked) < t.poll {
		return nil
	}
	w.checked = now
	out := make(map[string]string, len(w.seen))
	for uri, fp := range w.seen {
		out[uri] = fp
	}
	return out
}

// seenNow records uri's listing as fp, if session still watches it.
func (t *subscriptions) seenNow(session, uri, fp string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if w := t.bySession[session]; w != nil {
		if _, ok := w.seen[uri]; ok {
			w.seen[uri] = fp
		}
	}
}

// count is the number of subscriptions held (tests).
func (t *subscriptions) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}
