package peermcp

import (
	"io"
	"sync"
	"time"
)

// Bounds of a lines-protocol stream's writer (either end).
const (
	// linesWriteWait is how long one write may block (the other end
	// stopped reading) before the stream is given up: from half of it to
	// all, since the deadline is moved only once half of it has passed
	// (setting it on a stream replaces a timer: every write did it).
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
// they were added, in as few writes as it can, without a goroutine of its
// own: whoever adds an urgent line while no write is under way writes
// everything waiting, and goes on while more arrived during its write;
// lines added meanwhile, or within linesCoalesce of a notification, go out
// together. A failed write, or more than maxLinesPending bytes waiting,
// ends it and calls fail once.
type lineWriter struct {
	c    lineConn
	fail func()

	mu    sync.Mutex // guards what follows
	buf   []byte     // lines waiting
	spare []byte     // the last write's buffer, for reuse
	armed bool       // the coalescing timer runs for buf
	// deadline is the write deadline set on c (written by the writing
	// goroutine only).
	deadline time.Time
	writing  bool // a goroutine is writing: it takes buf too
	ended    bool
	timer    *time.Timer
	idle     *sync.Cond // signalled when writing ends
}

func newLineWriter(c lineConn, fail func()) *lineWriter {
	w := &lineWriter{c: c, fail: fail}
	w.idle = sync.NewCond(&w.mu)
	w.timer = time.AfterFunc(time.Hour, func() { w.mu.Lock(); w.armed = false; w.drainLocked() })
	w.timer.Stop()
	return w
}

// add queues line (its newline included); urgent lines are written at
// once, others within linesCoalesce. It reports false once the writer
// ended. An urgent add may write (and wait for the stream) itself.
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
	if !urgent {
		if !w.armed {
			w.armed = true
			w.timer.Reset(linesCoalesce)
		}
		w.mu.Unlock()
		return true
	}
	w.drainLocked()
	return true
}

// drainLocked writes what is waiting unless another goroutine is writing
// (it will take it), and unlocks w.mu.
func (w *lineWriter) drainLocked() {
	if w.writing {
		w.mu.Unlock()
		return
	}
	w.writing = true
	for len(w.buf) > 0 && !w.ended {
		b := w.buf
		w.buf, w.spare = w.spare[:0], nil
		w.mu.Unlock()
		if now := time.Now(); now.Add(linesWriteWait / 2).After(w.deadline) {
			w.deadline = now.Add(linesWriteWait)
			_ = w.c.SetWriteDeadline(w.deadline)
		}
		_, err := w.c.Write(b)
		w.mu.Lock()
		w.spare = b[:0]
		if err != nil {
			w.ended = true
			w.mu.Unlock()
			w.fail()
			w.mu.Lock()
		}
	}
	w.writing = false
	w.idle.Broadcast()
	w.mu.Unlock()
}

// close writes what is queued and ends the writer.
func (w *lineWriter) close() {
	w.timer.Stop()
	w.mu.Lock()
	for w.writing {
		w.idle.Wait()
	}
	w.drainLocked()
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}
