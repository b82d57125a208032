// Package modelsched shares each model endpoint among the turns that want
// it: a bound on the requests in flight at one endpoint, a bounded queue
// behind it, and round robin between callers in that queue, so one
// caller's fifty turns wait behind the nine others' one each instead of in
// front of them (docs/architecture.md, "Model scheduler"). It knows
// nothing of HTTP or of models: the runtime asks for a slot around each
// completion request.
package modelsched

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Options configure New. The numbers come from the node's flags
// (--llm-concurrency, --llm-queue); the package states none of its own.
type Options struct {
	// Limit is how many requests may be in flight at one endpoint, unless
	// the request names its own (Request.Limit). It must be at least 1.
	Limit int
	// MaxQueue is how many requests may wait at one endpoint; past it
	// Acquire refuses with a *BusyError. 0: none wait.
	MaxQueue int
	// Now is the clock wait times are measured on. Default time.Now.
	Now func() time.Time
	// Observer, if set, hears queue lengths, slots in flight and waits.
	Observer Observer
}

// Observer hears what the scheduler does, per endpoint (metrics). Its
// methods are called with the scheduler's lock held: they must be quick
// and must not call back.
type Observer interface {
	// Waiting is how many requests wait at endpoint now.
	Waiting(endpoint string, n int)
	// InFlight is how many requests hold a slot at endpoint now.
	InFlight(endpoint string, n int)
	// Waited is how long a request waited for its slot (0 if it had one
	// at once).
	Waited(endpoint string, d time.Duration)
}

// Request asks for one slot at an endpoint.
type Request struct {
	// Endpoint names the model server; requests with the same one share
	// its slots.
	Endpoint string
	// Caller is who is asking (a person, a session, a node): the queue
	// takes callers in turn.
	Caller string
	// Limit, if above 0, is this request's own bound on the requests in
	// flight at the endpoint (an agent's owner who knows the model
	// server): it starts only while fewer than Limit are.
	Limit int
	// OnWait, if set, hears how many requests are ahead while this one
	// waits, each time that changes, and -1 once it has its slot. It is
	// not called when a slot is free at once. It runs on the caller's
	// goroutine.
	OnWait func(ahead int)
}

// BusyError refuses a request when the endpoint's queue is full.
type BusyError struct {
	Endpoint string
	Waiting  int
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("busy: %d waiting; try again shortly", e.Waiting)
}

// Scheduler hands out the slots of every endpoint. It is safe for
// concurrent use; its zero value is not usable (New).
type Scheduler struct {
	opts Options
	mu   sync.Mutex
	eps  map[string]*endpoint
}

// endpoint is one model server's slots and queue. ring holds the callers
// with waiting requests; ring[0] is next.
type endpoint struct {
	name     string
	inFlight int
	waiting  int
	ring     []*callerQueue
}

type callerQueue struct {
	key string
	ws  []*waiter
}

type waiter struct {
	limit   int
	since   time.Time
	ready   chan struct{} // closed when granted
	moved   chan struct{} // the queue changed: look at the position again
	granted bool
}

// New returns a Scheduler, or an error for a Limit below 1 or a negative
// MaxQueue.
func New(opts Options) (*Scheduler, error) {
	if opts.Limit < 1 || opts.MaxQueue < 0 {
		return nil, fmt.Errorf("modelsched: limit %d and queue %d: the limit must be at least 1 and the queue not negative", opts.Limit, opts.MaxQueue)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Scheduler{opts: opts, eps: map[string]*endpoint{}}, nil
}

// Acquire waits for a slot at r.Endpoint and returns the function that
// gives it back (call it once the response is read; more calls do
// nothing). It fails with a *BusyError when the queue is full, and with
// ctx's error when ctx ends first; a request that stops waiting leaves
// the queue at once.
func (s *Scheduler) Acquire(ctx context.Context, r Request) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &waiter{limit: r.Limit, since: s.opts.Now(), ready: make(chan struct{}), moved: make(chan struct{}, 1)}
	if w.limit < 1 {
		w.limit = s.opts.Limit
	}
	s.mu.Lock()
	ep := s.eps[r.Endpoint]
	if ep == nil {
		ep = &endpoint{name: r.Endpoint}
		s.eps[r.Endpoint] = ep
	}
	if !(ep.waiting == 0 && ep.inFlight < w.limit) && ep.waiting >= s.opts.MaxQueue {
		n := ep.waiting
		s.forget(ep)
		s.mu.Unlock()
		return nil, &BusyError{Endpoint: r.Endpoint, Waiting: n}
	}
	s.enqueue(ep, r.Caller, w)
	s.dispatch(ep)
	ahead := -1
	if !w.granted {
		ahead = s.ahead(ep, w)
	}
	s.mu.Unlock()

	release = s.releaser(ep)
	if ahead < 0 {
		return release, nil
	}
	notify := func(n int) {
		if r.OnWait != nil {
			r.OnWait(n)
		}
	}
	notify(ahead)
	for {
		select {
		case <-w.ready:
			notify(-1)
			return release, nil
		case <-w.moved:
			s.mu.Lock()
			n := -1
			if !w.granted {
				n = s.ahead(ep, w)
			}
			s.mu.Unlock()
			if n >= 0 && n != ahead {
				ahead = n
				notify(n)
			}
		case <-ctx.Done():
			s.mu.Lock()
			granted := w.granted
			if !granted {
				s.remove(ep, w)
				s.dispatch(ep) // a waiter it held back by its limit may go
				s.forget(ep)
			}
			s.mu.Unlock()
			if granted {
				release() // granted as ctx ended: hand the slot on
			}
			return nil, fmt.Errorf("waiting for the model: %w", ctx.Err())
		}
	}
}

// releaser returns the once-only release of a slot at ep.
func (s *Scheduler) releaser(ep *endpoint) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			ep.inFlight--
			s.observeInFlight(ep)
			s.dispatch(ep)
			s.forget(ep)
		})
	}
}

// enqueue puts w at the back of its caller's queue, and a caller new to
// the queue at the back of the ring. Called with s.mu held.
func (s *Scheduler) enqueue(ep *endpoint, caller string, w *waiter) {
	ep.waiting++
	for _, q := range ep.ring {
		if q.key == caller {
			q.ws = append(q.ws, w)
			s.observeWaiting(ep)
			return
		}
	}
	ep.ring = append(ep.ring, &callerQueue{key: caller, ws: []*waiter{w}})
	s.observeWaiting(ep)
}

// dispatch grants slots while there are some: to the first caller in the
// ring whose next request's limit allows one more in flight, which then
// goes to the back of the ring. Called with s.mu held.
func (s *Scheduler) dispatch(ep *endpoint) {
	changed := false
	for {
		i := slices.IndexFunc(ep.ring, func(q *callerQueue) bool { return ep.inFlight < q.ws[0].limit })
		if i < 0 {
			break
		}
		q := ep.ring[i]
		w := q.ws[0]
		q.ws = q.ws[1:]
		ep.ring = slices.Delete(ep.ring, i, i+1)
		if len(q.ws) > 0 {
			ep.ring = append(ep.ring, q)
		}
		ep.waiting--
		ep.inFlight++
		w.granted = true
		close(w.ready)
		if s.opts.Observer != nil {
			s.opts.Observer.Waited(ep.name, s.opts.Now().Sub(w.since))
		}
		changed = true
	}
	if !changed {
		return
	}
	s.observeWaiting(ep)
	s.observeInFlight(ep)
	s.moved(ep)
}

// remove takes a waiter that stopped waiting out of the queue. Called with
// s.mu held.
func (s *Scheduler) remove(ep *endpoint, w *waiter) {
	for i, q := range ep.ring {
		j := slices.Index(q.ws, w)
		if j < 0 {
			continue
		}
		q.ws = slices.Delete(q.ws, j, j+1)
		if len(q.ws) == 0 {
			ep.ring = slices.Delete(ep.ring, i, i+1)
		}
		ep.waiting--
		s.observeWaiting(ep)
		s.moved(ep)
		return
	}
}

// moved tells every waiter at ep to look at its position again.
func (s *Scheduler) moved(ep *endpoint) {
	for _, q := range ep.ring {
		for _, w := range q.ws {
			select {
			case w.moved <- struct{}{}:
			default: // already told
			}
		}
	}
}

// ahead is how many requests the ring grants before w if nothing else
// arrives: each caller before w's in the ring gets one more turn than w's
// place in its own queue, each after it as many. Called with s.mu held.
func (s *Scheduler) ahead(ep *endpoint, w *waiter) int {
	k, p := -1, -1
	for i, q := range ep.ring {
		if j := slices.Index(q.ws, w); j >= 0 {
			k, p = i, j
			break
		}
	}
	if k < 0 {
		return 0
	}
	n := p // w's own caller's earlier requests
	for i, q := range ep.ring {
		switch {
		case i < k:
			n += min(len(q.ws), p+1)
		case i > k:
			n += min(len(q.ws), p)
		}
	}
	return n
}

// forget drops an idle endpoint, so the map holds only endpoints in use.
// Called with s.mu held.
func (s *Scheduler) forget(ep *endpoint) {
	if ep.inFlight == 0 && ep.waiting == 0 && s.eps[ep.name] == ep {
		delete(s.eps, ep.name)
	}
}

// Load is how many requests hold a slot and how many wait at endpoint.
func (s *Scheduler) Load(endpoint string) (inFlight, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ep := s.eps[endpoint]; ep != nil {
		return ep.inFlight, ep.waiting
	}
	return 0, 0
}

func (s *Scheduler) observeWaiting(ep *endpoint) {
	if s.opts.Observer != nil {
		s.opts.Observer.Waiting(ep.name, ep.waiting)
	}
}

func (s *Scheduler) observeInFlight(ep *endpoint) {
	if s.opts.Observer != nil {
		s.opts.Observer.InFlight(ep.name, ep.inFlight)
	}
}
