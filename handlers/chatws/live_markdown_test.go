package chatws

import (
	"strings"
	"testing"
	"time"
)

// TestLiveMarkdownPacing: a chunk that finishes a line is rendered with
// the whole reply so far, at most once a renderEvery; chunks in between
// (and those that finish no line) go as text, for the page to append to
// the tail it has.
func TestLiveMarkdownPacing(t *testing.T) {
	var l liveMarkdown
	t0 := time.Unix(1000, 0)
	every := 100 * time.Millisecond
	steps := []struct {
		chunk    string
		at       time.Duration
		wantHTML string // "" : no rendering with this chunk
		wantTail string
	}{
		{"# Ti", 0, "", ""},
		{"tle\nSome **b", 0, "<h1>Title</h1>", "Some **b"},
		{"old**\n", 50 * time.Millisecond, "", ""}, // within the pace: text only
		{"more ", 120 * time.Millisecond, "", ""},  // no line finished
		{"words\nand", 130 * time.Millisecond, "<strong>bold</strong>", "and"},
	}
	for _, s := range steps {
		html, tail := l.add(s.chunk, t0.Add(s.at), every)
		if (s.wantHTML == "") != (html == "") || !strings.Contains(html, s.wantHTML) || tail != s.wantTail {
			t.Errorf("add(%q) at %v = %q, %q; want html with %q, tail %q", s.chunk, s.at, html, tail, s.wantHTML, s.wantTail)
		}
	}
}
