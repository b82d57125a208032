package chatws_test

import (
	"runtime"
	"testing"
	"time"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatSocketsDoNotLeak opens and closes many chat sockets from one
// anonymous client: every goroutine a socket started must end with it
// (each used to stay until server shutdown).
func TestChatSocketsDoNotLeak(t *testing.T) {
	e := NewChat(t)
	_, v := onChatPage(t, e)
	_ = v.MustDial().Close() // warm up: first-use goroutines (pools) start here

	baseline := settledGoroutines()
	const sockets = 500
	for range sockets {
		c := v.MustDial()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline+10 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines 10 s after closing %d sockets; baseline %d", n, sockets, baseline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// settledGoroutines waits for the goroutine count to stop falling and
// returns it.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 20 {
		time.Sleep(50 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}
