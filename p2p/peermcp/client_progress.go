package peermcp

import (
	"context"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// onNotification hands a progress notification to the turn it belongs to.
func (c *conn) onNotification(nt mcp.JSONRPCNotification) {
	if nt.Method != string(mcp.MethodNotificationProgress) {
		return
	}
	f := nt.Params.AdditionalFields
	token, _ := f["progressToken"].(string)
	msg, _ := f["message"].(string)
	progress, _ := f["progress"].(float64)
	if s, ok := c.sinks.Load(token); ok {
		s.(*progressSink).chunk(progress, msg)
	}
}

// progressSink passes one turn's chunks to its emit, in order, once each,
// and never after the turn returned.
type progressSink struct {
	mu     sync.Mutex
	emit   func(string) error
	cancel context.CancelFunc
	last   float64
	text   strings.Builder // what was emitted
	err    error
	done   bool
}

func (s *progressSink) chunk(progress float64, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.err != nil || progress <= s.last || text == "" {
		return
	}
	s.last = progress
	if s.emit == nil {
		return
	}
	if err := s.emit(text); err != nil {
		s.err = err
		s.cancel()
		return
	}
	s.text.WriteString(text)
}

// finish stops further chunks and returns emit's error, if any.
func (s *progressSink) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	return s.err
}
