package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"time"
)

// importProgress prints how an import goes: on a terminal one line
// rewritten in place (done of total, the percentage, the rate and the
// time left), otherwise a plain line at most every Every, for logs. The
// total is 0 when it is not known up front (standard input, a catalog):
// then the line says the count and the rate only.
type importProgress struct {
	w     io.Writer
	tty   bool
	total int
	now   func() time.Time
	every time.Duration
	start time.Time
	last  time.Time
}

// newImportProgress prints to w, rewriting one line when tty.
func newImportProgress(w io.Writer, tty bool, total int, now func() time.Time) *importProgress {
	every := time.Second
	if tty {
		every = 200 * time.Millisecond
	}
	t := now()
	return &importProgress{w: w, tty: tty, total: total, now: now, every: every, start: t, last: t}
}

// isTerminal tells whether w is a terminal (a character device), where
// the progress line may be rewritten in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// update tells the progress after done items (created, updated,
// refused of them); it prints when Every has passed since the last line.
func (p *importProgress) update(done, created, updated, refused int) {
	now := p.now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	p.print(now, done, created, updated, refused)
}

// finish ends a terminal's line with the last figures.
func (p *importProgress) finish(done, created, updated, refused int) {
	if !p.tty {
		return
	}
	p.print(p.now(), done, created, updated, refused)
	fmt.Fprintln(p.w)
}

func (p *importProgress) print(now time.Time, done, created, updated, refused int) {
	el := now.Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	line := items(done)
	if p.total > 0 {
		pct := min(100, 100*done/p.total)
		line = fmt.Sprintf("%d of %s (%d%%)", done, items(p.total), pct)
	}
	line += fmt.Sprintf(", %.0f/s", rate)
	if p.total > 0 && done < p.total && rate > 0 {
		left := time.Duration(float64(p.total-done) / rate * float64(time.Second))
		line += ", about " + roundLeft(left).String() + " left"
	}
	line += fmt.Sprintf(" (%d created, %d updated, %d refused)", created, updated, refused)
	if p.tty {
		fmt.Fprint(p.w, "\r\033[K"+line)
		return
	}
	fmt.Fprintln(p.w, line)
}

// roundLeft rounds a time left to what a person reads: whole seconds
// under a minute, else tens of seconds.
func roundLeft(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Second)
	}
	return d.Round(10 * time.Second)
}

// countJSONLines counts the items of a JSON-lines file as bulk reads them:
// every line but the blank ones and comments (#). 0 when the file cannot
// be read; the import then says no total.
func countJSONLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	n := 0
	start := true // at the start of a line, before anything but spaces
	counted := false
	for {
		b, err := r.ReadSlice('\n')
		for _, c := range b {
			switch {
			case c == '\n':
				start, counted = true, false
			case !start || counted:
			case c == ' ' || c == '\t' || c == '\r':
			case c == '#':
				start = false
			default:
				start, counted = false, true
				n++
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return n
		}
	}
}
