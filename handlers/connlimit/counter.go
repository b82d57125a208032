package connlimit

import "sync"

// Counter counts what each key holds open (connections, sockets) and
// refuses more than max per key. It keeps no entry for a key holding
// nothing, so it stays as small as what is open.
type Counter struct {
	mu   sync.Mutex
	max  int
	held map[string]int
}

// NewCounter allows max per key; max <= 0 allows any number.
func NewCounter(max int) *Counter {
	return &Counter{max: max, held: map[string]int{}}
}

// Acquire takes one slot for key. It returns false, taking nothing, when
// key already holds max; otherwise the caller must call the returned
// release exactly once (later calls do nothing).
func (c *Counter) Acquire(key string) (release func(), ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max > 0 && c.held[key] >= c.max {
		return nil, false
	}
	c.held[key]++
	var once sync.Once
	return func() { once.Do(func() { c.release(key) }) }, true
}

func (c *Counter) release(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[key] <= 1 {
		delete(c.held, key)
		return
	}
	c.held[key]--
}

// Held is what key holds now.
func (c *Counter) Held(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[key]
}

// Max is how many one key may hold (0 or less: any number), for messages
// that tell a refused client its cap.
func (c *Counter) Max() int { return c.max }
