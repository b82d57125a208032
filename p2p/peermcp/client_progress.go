package peermcp

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agentsite/agentsite/agent"
)

// onNotification hands a progress or step notification to the turn it
// belongs to.
func (c *conn) onNotification(nt mcp.JSONRPCNotification) { deliver(nt, c.sink) }

// sink is the turn in flight with the progress token, or nil.
func (c *conn) sink(token string) *progressSink {
	if s, ok := c.sinks.Load(token); ok {
		return s.(*progressSink)
	}
	return nil
}

// deliver hands a progress or step notification to the turn find finds
// by its progress token.
func deliver(nt mcp.JSONRPCNotification, find func(token string) *progressSink) {
	f := nt.Params.AdditionalFields
	token, _ := f["progressToken"].(string)
	s := find(token)
	if s == nil {
		return
	}
	switch nt.Method {
	case string(mcp.MethodNotificationProgress):
		msg, _ := f["message"].(string)
		progress, _ := f["progress"].(float64)
		s.chunk(progress, msg)
	case MethodStep:
		s.step(f["step"])
	case MethodWaiting:
		s.waiting(f["ahead"])
	}
}

// progressSink passes one turn's chunks to its emit, in order, once each,
// and never after the turn returned.
type progressSink struct {
	mu     sync.Mutex
	emit   func(string) error
	onStep func(agent.Step) // nil: the caller wants no steps
	onWait func(int)        // nil: the caller wants no place in the queue
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

// step passes a host's delegation step on, bounded like any text from
// another node.
func (s *progressSink) step(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || s.onStep == nil {
		return
	}
	raw, err := json.Marshal(v)
	var st agent.Step
	if err != nil || len(raw) > maxStepBytes || json.Unmarshal(raw, &st) != nil {
		return
	}
	st.AgentName, st.Host = boundText(st.AgentName, 100), boundText(st.Host, 100)
	st.Error = boundText(st.Error, 300)
	s.onStep(st)
}

// maxStepBytes bounds one step notification (a step carries a question and
// a reply of at most a message each).
const maxStepBytes = 160 << 10

// finish stops further chunks and returns emit's error, if any.
func (s *progressSink) finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	return s.err
}

// maxAhead bounds the place in a host's model queue this node believes.
const maxAhead = 1 << 16

// waiting passes the turn's place in the host's model queue on: a whole
// number from -1 (the model took it) to maxAhead; anything else is
// dropped.
func (s *progressSink) waiting(v any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := v.(float64)
	if s.done || s.onWait == nil || !ok || f != float64(int(f)) || f < -1 || f > maxAhead {
		return
	}
	s.onWait(int(f))
}
