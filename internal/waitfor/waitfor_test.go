package waitfor_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestUntilReturnsOnceTheConditionHolds: Until keeps polling a condition
// that holds only on its fifth call, and returns then.
func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	waitfor.Until(t, time.Minute, "the fifth call", func() bool { return calls.Add(1) == 5 })
	if n := calls.Load(); n != 5 {
		t.Fatalf("cond called %d times, want 5", n)
	}
}

// recorder is a testing.TB that records a Fatalf and ends the goroutine,
// as testing.T does.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = format
	panic(r)
}

// TestUntilFailsAfterTheDeadline: a condition that never holds fails the
// test, naming what it waited for.
func TestUntilFailsAfterTheDeadline(t *testing.T) {
	r := &recorder{TB: t}
	func() {
		defer func() {
			if p := recover(); p != nil && p != r {
				panic(p)
			}
		}()
		waitfor.Until(r, time.Millisecond, "nothing", func() bool { return false })
	}()
	if r.failed == "" {
		t.Fatal("Until returned though the condition never held")
	}
}
