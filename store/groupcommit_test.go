package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store"
)

// TestGroupWriter: a caller that gives up before its write was taken gets its
// context's error and the write is never committed; one whose write was
// taken gets the batch's answer even after giving up; Close fails what is
// still queued.
func TestGroupWriter(t *testing.T) {
	var (
		mu      sync.Mutex
		batches [][]int
	)
	release := make(chan struct{})
	g := store.NewGroupWriter(8, func(batch []*store.Pending[int]) {
		mu.Lock()
		var ops []int
		for _, p := range batch {
			ops = append(ops, p.Op)
			if p.Op < 0 {
				p.Err = errors.New("refused")
			}
		}
		batches = append(batches, ops)
		first := len(batches) == 1
		mu.Unlock()
		if first {
			<-release // the first batch holds the writer
		}
	})
	committed := func() [][]int {
		mu.Lock()
		defer mu.Unlock()
		return append([][]int(nil), batches...)
	}

	// The first write is taken and held; its caller gives up, but its
	// answer is the batch's.
	ctx1, cancel1 := context.WithCancel(t.Context())
	done1 := make(chan error, 1)
	go func() { done1 <- g.Do(ctx1, 1) }()
	waitfor.Until(t, 5*time.Second, "the first batch to start", func() bool { return len(committed()) == 1 })
	cancel1()

	// Queued behind it: two writes, one refused, and one whose caller
	// gives up before the writer takes it.
	errs := make(chan error, 2)
	go func() { errs <- g.Do(t.Context(), 2) }()
	go func() { errs <- g.Do(t.Context(), -3) }()
	ctx4, cancel4 := context.WithCancel(t.Context())
	done4 := make(chan error, 1)
	go func() { done4 <- g.Do(ctx4, 4) }()
	// The writer is held in the first batch, so write 4 cannot be taken
	// before its caller gives up, whether or not it was queued yet.
	cancel4()
	if err := <-done4; !errors.Is(err, context.Canceled) {
		t.Errorf("a write given up while queued = %v, want context.Canceled", err)
	}
	close(release)
	if err := <-done1; err != nil {
		t.Errorf("a taken write given up = %v, want its batch's answer (nil)", err)
	}
	var refused, ok int
	for range 2 {
		if err := <-errs; err != nil {
			refused++
		} else {
			ok++
		}
	}
	if refused != 1 || ok != 1 {
		t.Errorf("%d refused, %d written; want one each", refused, ok)
	}
	for _, b := range committed() {
		for _, op := range b {
			if op == 4 {
				t.Errorf("the write given up while queued was committed: %v", committed())
			}
		}
	}
	g.Close()
	if err := g.Do(t.Context(), 5); !errors.Is(err, store.ErrGroupWriterClosed) {
		t.Errorf("Do after Close = %v, want ErrGroupWriterClosed", err)
	}
}
