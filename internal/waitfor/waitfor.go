// Package waitfor is the tests' one way to wait for something another
// goroutine, process or node does: poll a condition until it holds, and
// fail the test once a deadline passes. Tests assert on outcomes, never on
// how fast a loaded machine reaches them, so the deadline is generous and
// the polling short.
package waitfor

import (
	"testing"
	"time"
)

// Until polls cond until it holds, failing tb (naming what it waited for)
// when within has passed. It polls at once, then after 1 ms, doubling up
// to every 100 ms: a condition that holds soon is seen soon, and a slow
// one costs few calls.
func Until(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for delay := time.Millisecond; ; delay = min(2*delay, maxDelay) {
		if cond() {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(delay) // the polling interval, not a wait for the outcome
	}
}

// maxDelay is the longest pause between two polls.
const maxDelay = 100 * time.Millisecond
