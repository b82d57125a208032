package modelsched_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// clock is a test clock that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// observer records what the scheduler reports.
type observer struct {
	mu       sync.Mutex
	waiting  map[string]int
	inFlight map[string]int
	waited   []time.Duration
}

func newObserver() *observer {
	return &observer{waiting: map[string]int{}, inFlight: map[string]int{}}
}

func (o *observer) Waiting(ep string, n int)  { o.mu.Lock(); o.waiting[ep] = n; o.mu.Unlock() }
func (o *observer) InFlight(ep string, n int) { o.mu.Lock(); o.inFlight[ep] = n; o.mu.Unlock() }
func (o *observer) Waited(_ string, d time.Duration) {
	o.mu.Lock()
	o.waited = append(o.waited, d)
	o.mu.Unlock()
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// queued starts Acquire on a goroutine and waits until it is in the queue,
// so requests enter in a known order. The result arrives on the channel.
type result struct {
	release func()
	err     error
}

func queued(t *testing.T, ctx context.Context, s *modelsched.Scheduler, r modelsched.Request) <-chan result {
	t.Helper()
	_, before := s.Load(r.Endpoint)
	ch := make(chan result, 1)
	go func() {
		rel, err := s.Acquire(ctx, r)
		ch <- result{rel, err}
	}()
	waitFor(t, "the request to queue", func() bool { _, w := s.Load(r.Endpoint); return w == before+1 })
	return ch
}

func mustAcquire(t *testing.T, s *modelsched.Scheduler, r modelsched.Request) func() {
	t.Helper()
	rel, err := s.Acquire(context.Background(), r)
	if err != nil {
		t.Fatalf("Acquire %+v: %v", r, err)
	}
	return rel
}

func TestLimitHeldPerEndpoint(t *testing.T) {
	s := mustNew(t, modelsched.Options{Limit: 2, MaxQueue: 8})
	a := modelsched.Request{Endpoint: "a", Caller: "p"}
	r1, r2 := mustAcquire(t, s, a), mustAcquire(t, s, a)
	third := queued(t, context.Background(), s, a)
	// Another endpoint has its own slots.
	rb := mustAcquire(t, s, modelsched.Request{Endpoint: "b", Caller: "p"})
	if in, w := s.Load("a"); in != 2 || w != 1 {
		t.Fatalf("endpoint a: %d in flight, %d waiting; want 2 and 1", in, w)
	}
	select {
	case <-third:
		t.Fatal("a third request started while two held the endpoint's two slots")
	default:
	}
	r1()
	r1() // a second release gives nothing back twice
	res := <-third
	if res.err != nil {
		t.Fatal(res.err)
	}
	if in, w := s.Load("a"); in != 2 || w != 0 {
		t.Fatalf("after a release: %d in flight, %d waiting; want 2 and 0", in, w)
	}
	r2()
	res.release()
	rb()
	if in, w := s.Load("a"); in != 0 || w != 0 {
		t.Fatalf("all released: %d in flight, %d waiting", in, w)
	}
}

func TestRoundRobinAcrossCallers(t *testing.T) {
	s := mustNew(t, modelsched.Options{Limit: 1, MaxQueue: 64})
	hold := mustAcquire(t, s, modelsched.Request{Endpoint: "m", Caller: "other"})
	type entry struct {
		name string
		ch   <-chan result
	}
	var entries []entry
	// One caller sends five, then three callers send one each.
	for i := 0; i < 5; i++ {
		entries = append(entries, entry{"big", queued(t, context.Background(), s, modelsched.Request{Endpoint: "m", Caller: "big"})})
	}
	var aheadMu sync.Mutex
	var smallAhead []int
	for _, c := range []string{"s1", "s2", "s3"} {
		r := modelsched.Request{Endpoint: "m", Caller: c}
		if c == "s3" {
			r.OnWait = func(n int) { aheadMu.Lock(); smallAhead = append(smallAhead, n); aheadMu.Unlock() }
		}
		entries = append(entries, entry{c, queued(t, context.Background(), s, r)})
	}
	// Each release lets exactly one go; see who.
	var order []string
	release := hold
	for range entries {
		release()
		var got *entry
		waitFor(t, "a grant", func() bool {
			for i := range entries {
				select {
				case res := <-entries[i].ch:
					if res.err != nil {
						t.Fatal(res.err)
					}
					release, got = res.release, &entries[i]
					return true
				default:
				}
			}
			return false
		})
		order = append(order, got.name)
	}
	release()
	want := []string{"big", "s1", "s2", "s3", "big", "big", "big", "big"}
	if !slices.Equal(order, want) {
		t.Fatalf("grant order %v, want %v (one caller's many must not starve the others)", order, want)
	}
	// s3 waited behind big's first, s1 and s2: 3 ahead, then fewer, then
	// its turn (-1).
	waitFor(t, "s3's last position", func() bool {
		aheadMu.Lock()
		defer aheadMu.Unlock()
		return len(smallAhead) > 0 && smallAhead[len(smallAhead)-1] == -1
	})
	aheadMu.Lock()
	defer aheadMu.Unlock()
	if smallAhead[0] != 3 {
		t.Fatalf("s3 first heard %d ahead, want 3 (%v)", smallAhead[0], smallAhead)
	}
	for i := 1; i < len(smallAhead)-1; i++ {
		if smallAhead[i] >= smallAhead[i-1] {
			t.Fatalf("s3's positions did not count down: %v", smallAhead)
		}
	}
}

func TestQueueBoundRefuses(t *testing.T) {
	s := mustNew(t, modelsched.Options{Limit: 1, MaxQueue: 2})
	r := modelsched.Request{Endpoint: "m", Caller: "p"}
	hold := mustAcquire(t, s, r)
	w1, w2 := queued(t, context.Background(), s, r), queued(t, context.Background(), s, r)
	_, err := s.Acquire(context.Background(), modelsched.Request{Endpoint: "m", Caller: "q"})
	var be *modelsched.BusyError
	if !errors.As(err, &be) || be.Waiting != 2 {
		t.Fatalf("over the bound: %v, want a BusyError with 2 waiting", err)
	}
	if got, want := err.Error(), "busy: 2 waiting; try again shortly"; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	// The refused request took no place in the queue.
	if _, w := s.Load("m"); w != 2 {
		t.Fatalf("%d waiting after a refusal, want 2", w)
	}
	hold()
	(<-w1).release()
	(<-w2).release()
}

func TestCancelWhileQueued(t *testing.T) {
	obs := newObserver()
	s := mustNew(t, modelsched.Options{Limit: 1, MaxQueue: 8, Observer: obs})
	hold := mustAcquire(t, s, modelsched.Request{Endpoint: "m", Caller: "p"})
	ctx, stop := context.WithCancel(context.Background())
	first := queued(t, ctx, s, modelsched.Request{Endpoint: "m", Caller: "a"})
	var mu sync.Mutex
	var heard []int
	second := queued(t, context.Background(), s, modelsched.Request{Endpoint: "m", Caller: "b",
		OnWait: func(n int) { mu.Lock(); heard = append(heard, n); mu.Unlock() }})
	stop() // the person pressed Stop while waiting
	res := <-first
	if !errors.Is(res.err, context.Canceled) || res.release != nil {
		t.Fatalf("canceled waiter: %v, want context.Canceled and no slot", res.err)
	}
	if in, w := s.Load("m"); in != 1 || w != 1 {
		t.Fatalf("after the cancel: %d in flight, %d waiting; want 1 and 1", in, w)
	}
	waitFor(t, "the second to move up", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(heard, []int{1, 0})
	})
	hold()
	res = <-second // the freed place went to the next waiter
	if res.err != nil {
		t.Fatal(res.err)
	}
	res.release()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.waiting["m"] != 0 || obs.inFlight["m"] != 0 {
		t.Fatalf("metrics at rest: %d waiting, %d in flight", obs.waiting["m"], obs.inFlight["m"])
	}
}

func TestWaitTimeOnTheInjectedClock(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	obs := newObserver()
	s := mustNew(t, modelsched.Options{Limit: 1, MaxQueue: 8, Now: clk.Now, Observer: obs})
	hold := mustAcquire(t, s, modelsched.Request{Endpoint: "m"})
	w := queued(t, context.Background(), s, modelsched.Request{Endpoint: "m"})
	clk.Add(3 * time.Second)
	hold()
	(<-w).release()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if !slices.Equal(obs.waited, []time.Duration{0, 3 * time.Second}) {
		t.Fatalf("waits %v, want [0s 3s]", obs.waited)
	}
}

func TestOwnLimit(t *testing.T) {
	// An agent whose owner says its model takes one at a time waits while
	// another agent's request holds the endpoint, under a node limit of 4.
	s := mustNew(t, modelsched.Options{Limit: 4, MaxQueue: 8})
	hold := mustAcquire(t, s, modelsched.Request{Endpoint: "m", Caller: "a"})
	one := queued(t, context.Background(), s, modelsched.Request{Endpoint: "m", Caller: "b", Limit: 1})
	// A request under the node's limit still starts.
	mustAcquire(t, s, modelsched.Request{Endpoint: "m", Caller: "c"})()
	hold()
	(<-one).release()
}

// mustNew is a Scheduler for a test.
func mustNew(tb testing.TB, opts modelsched.Options) *modelsched.Scheduler {
	tb.Helper()
	s, err := modelsched.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func TestNewRefusesNoLimit(t *testing.T) {
	for _, o := range []modelsched.Options{{Limit: 0, MaxQueue: 1}, {Limit: 1, MaxQueue: -1}} {
		if _, err := modelsched.New(o); err == nil {
			t.Errorf("New(%+v) = nil error", o)
		}
	}
}
