package mcppool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// fakeClient counts its closes.
type fakeClient struct {
	id     int
	closes atomic.Int32
}

func (f *fakeClient) Close() error { f.closes.Add(1); return nil }

// dialer makes fakeClients and counts its dials; a dial waits for gate
// when it is set.
type dialer struct {
	mu    sync.Mutex
	made  []*fakeClient
	gate  chan struct{}
	fails error
}

func (d *dialer) dial(ctx context.Context) (*fakeClient, error) {
	if d.gate != nil {
		select {
		case <-d.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fails != nil {
		return nil, d.fails
	}
	c := &fakeClient{id: len(d.made)}
	d.made = append(d.made, c)
	return c, nil
}

func (d *dialer) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.made)
}

func TestConcurrentAcquiresShareOneDial(t *testing.T) {
	p := New[string, *fakeClient](time.Minute)
	t.Cleanup(func() { _ = p.Close() })
	d := &dialer{gate: make(chan struct{})}
	var wg sync.WaitGroup
	got := make(chan *fakeClient, 20)
	for range 20 {
		wg.Go(func() {
			c, release, err := p.Acquire(t.Context(), "k", d.dial)
			if err != nil {
				t.Error(err)
				return
			}
			got <- c
			release(false)
		})
	}
	close(d.gate)
	wg.Wait()
	close(got)
	if d.count() != 1 {
		t.Errorf("%d dials for one key, want 1", d.count())
	}
	for c := range got {
		if c != d.made[0] {
			t.Errorf("got client %d, want the one dialled", c.id)
		}
	}
}

func TestBrokenClientIsClosedWhenReleasedAndRedialled(t *testing.T) {
	p := New[string, *fakeClient](time.Minute)
	t.Cleanup(func() { _ = p.Close() })
	d := &dialer{}
	first, release1, err := p.Acquire(t.Context(), "k", d.dial)
	if err != nil {
		t.Fatal(err)
	}
	_, release2, err := p.Acquire(t.Context(), "k", d.dial)
	if err != nil {
		t.Fatal(err)
	}
	release1(true)
	if first.closes.Load() != 0 {
		t.Fatal("a broken client was closed while another caller used it")
	}
	second, release3, err := p.Acquire(t.Context(), "k", d.dial)
	if err != nil || second == first {
		t.Fatalf("after a broken release: %v, same client %v", err, second == first)
	}
	release3(false)
	release2(false)
	waitfor.Until(t, 5*time.Second, "the broken client to close", func() bool { return first.closes.Load() == 1 })
	if second.closes.Load() != 0 {
		t.Error("the healthy client was closed")
	}
}

func TestIdleClientsAreClosed(t *testing.T) {
	p := New[string, *fakeClient](20 * time.Millisecond)
	t.Cleanup(func() { _ = p.Close() })
	d := &dialer{}
	c, release, err := p.Acquire(t.Context(), "k", d.dial)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond) // in use: idle time does not count
	if p.Len() != 1 || c.closes.Load() != 0 {
		t.Fatal("a client in use was swept")
	}
	release(false)
	waitfor.Until(t, 5*time.Second, "the idle client to close", func() bool { return p.Len() == 0 && c.closes.Load() == 1 })
	if _, release, err := p.Acquire(t.Context(), "k", d.dial); err != nil || d.count() != 2 {
		t.Fatalf("after expiry: %v, %d dials", err, d.count())
	} else {
		release(false)
	}
}

func TestCloseClosesEverythingAndRefuses(t *testing.T) {
	p := New[string, *fakeClient](time.Minute)
	d := &dialer{}
	inUse, release, err := p.Acquire(t.Context(), "a", d.dial)
	if err != nil {
		t.Fatal(err)
	}
	idle, release2, _ := p.Acquire(t.Context(), "b", d.dial)
	release2(false)
	// Broken, still in use: out of the map, so Close does not see it.
	evicted, release3, _ := p.Acquire(t.Context(), "c", d.dial)
	release3b := release3
	_, release4, _ := p.Acquire(t.Context(), "c", d.dial)
	release4(true)

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if inUse.closes.Load() != 1 || idle.closes.Load() != 1 {
		t.Errorf("closes: in use %d, idle %d; want 1 each", inUse.closes.Load(), idle.closes.Load())
	}
	release(true) // a call that failed because of Close
	release3b(false)
	if inUse.closes.Load() != 1 || evicted.closes.Load() != 1 {
		t.Errorf("after the last releases: in use closed %d times, evicted %d; want 1 each", inUse.closes.Load(), evicted.closes.Load())
	}
	if _, _, err := p.Acquire(t.Context(), "a", d.dial); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v", err)
	}
	_ = p.Close() // twice is fine
}

func TestCloseDuringDial(t *testing.T) {
	p := New[string, *fakeClient](time.Minute)
	d := &dialer{gate: make(chan struct{})}
	errc := make(chan error, 1)
	go func() {
		_, _, err := p.Acquire(t.Context(), "k", d.dial)
		errc <- err
	}()
	waitfor.Until(t, 5*time.Second, "the dial to start", func() bool { return p.Len() == 1 })
	_ = p.Close()
	close(d.gate)
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("a dial that ended after Close: %v", err)
	}
	if d.count() != 1 || d.made[0].closes.Load() != 1 {
		t.Error("the client dialled during Close was not closed")
	}
}

// TestWaiterRedialsWhenTheLeaderGaveUp: the first caller's context ends
// during the dial; the others still get a client instead of its
// cancellation.
func TestWaiterRedialsWhenTheLeaderGaveUp(t *testing.T) {
	p := New[string, *fakeClient](time.Minute)
	t.Cleanup(func() { _ = p.Close() })
	d := &dialer{gate: make(chan struct{})}
	lctx, cancel := context.WithCancel(t.Context())
	lerr := make(chan error, 1)
	go func() {
		_, _, err := p.Acquire(lctx, "k", d.dial)
		lerr <- err
	}()
	waitfor.Until(t, 5*time.Second, "the leader's dial", func() bool { return p.Len() == 1 })
	werr := make(chan error, 1)
	go func() {
		_, release, err := p.Acquire(t.Context(), "k", d.dial)
		if err == nil {
			release(false)
		}
		werr <- err
	}()
	// The waiter joins the leader's entry before the leader gives up.
	waitfor.Until(t, 5*time.Second, "the waiter to join", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		e := p.entries["k"]
		return e != nil && e.users == 2
	})
	cancel()
	if err := <-lerr; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: %v", err)
	}
	close(d.gate)
	if err := <-werr; err != nil {
		t.Errorf("waiter after the leader gave up: %v", err)
	}
}

func TestDialFailureIsNotCached(t *testing.T) {
	p := New[string, *fakeClient](time.Minute)
	t.Cleanup(func() { _ = p.Close() })
	boom := errors.New("boom")
	d := &dialer{fails: boom}
	if _, _, err := p.Acquire(t.Context(), "k", d.dial); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	d.fails = nil
	_, release, err := p.Acquire(t.Context(), "k", d.dial)
	if err != nil {
		t.Fatalf("after a failed dial: %v", err)
	}
	release(false)
}
