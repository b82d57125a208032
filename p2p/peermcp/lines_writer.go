package peermcp

import (
	"io"
	"sync"
	"time"
)

// Bounds of a lines-protocol stream's writer (either end).
const (
	// linesWriteWait is how long one write may block (the other end
	// stopped reading) before the stream is given up.
	linesWriteWait = 30 * time.Second
	// linesCoalesce is how long a notification may wait for more lines
	// to go out in one write with them: a fast agent's whole answer
	// leaves in one write, a slow one's chunks each this much later.
	// Requests and responses go at once.
	linesCoalesce = time.Millisecond
	// maxLinesPending bounds the bytes waiting to be written: a peer that
	// does not read what it asked for loses the stream, not this node's
	// memory.
	maxLinesPending = 16 << 20
)

// lineConn is what a lineWriter writes to (a network.Stream).
type lineConn interface {
	io.Writer
	SetWriteDeadline(time.Time) error
}

// lineWriter writes the lines of one stream from many calls, in the order
// they were added, from one goroutine, in as few writes as it can: lines
// added while a write is under way, or within linesCoalesce of a
// notification, go out together. A failed write, or more than
// maxLinesPending bytes waiting, ends it and calls fail once.
type lineWriter struct {
	c    lineConn
	fail func()

	mu     sync.Mutex // guards buf, armed, ended
	buf    []byte
	armed  bool // the coalescing timer runs for buf
	ended  bool
	timer  *time.Timer
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
}

func newLineWriter(c lineConn, fail func()) *lineWriter {
	w := &lineWriter{c: c, fail: fail, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	w.timer = time.AfterFunc(time.Hour, w.wake)
	w.timer.Stop()
	go w.run()
	return w
}

func (w *lineWriter) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// add queues line (its newline included); urgent lines are written at
// once, others within linesCoalesce. It reports false once the writer
// ended.
func (w *lineWriter) add(line []byte, urgent bool) bool {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return false
	}
	if len(w.buf)+len(line) > maxLinesPending {
		w.ended = true
		w.mu.Unlock()
		w.fail()
		return false
	}
	w.buf = append(w.buf, line...)
	kick := urgent
	if !urgent && !w.armed {
		w.armed = true
		w.timer.Reset(linesCoalesce)
	}
	w.mu.Unlock()
	if kick {
		w.wake()
	}
	return true
}

func (w *lineWriter) run() {
	defer close(w.done)
	var spare []byte
	for {
		stopping := false
		select {
		case <-w.kick:
		case <-w.stop:
			stopping = true
		}
		w.mu.Lock()
		b := w.buf
		w.buf, w.armed = spare[:0], false
		ended := w.ended
		w.mu.Unlock()
		if len(b) > 0 && !ended {
			_ = w.c.SetWriteDeadline(time.Now().Add(linesWriteWait))
			if _, err := w.c.Write(b); err != nil {
				w.mu.Lock()
				w.ended = true
				w.mu.Unlock()
				w.fail()
				return
			}
		}
		spare = b
		if stopping || ended {
			return
		}
	}
}

// close writes what is queued and stops the writer.
func (w *lineWriter) close() {
	w.closed.Do(func() {
		w.timer.Stop()
		close(w.stop)
		<-w.done
		w.mu.Lock()
		w.ended = true
		w.mu.Unlock()
	})
}
