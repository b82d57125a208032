package runtime

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
)

// a2aTurn follows one turn's A2A events (a Message, a Task, status and
// artifact updates, in any of the orders agents send them) to the reply
// text and the task's outcome.
type a2aTurn struct {
	reply     a2aReply
	contextID string
	taskID    a2a.TaskID
	state     a2a.TaskState
	failText  string // the status message of a failed, rejected or canceled task
	done      bool   // a Message, or a final or interrupted status, arrived
}

func newA2ATurn(maxReply int, emit func(string) error) *a2aTurn {
	return &a2aTurn{reply: a2aReply{max: maxReply, emit: emit, sources: map[string]*strings.Builder{}}}
}

// event takes one event; its text is emitted as it comes.
func (s *a2aTurn) event(ev a2a.Event) error {
	if info := ev.TaskInfo(); info.ContextID != "" {
		s.contextID = info.ContextID
	}
	if id := ev.TaskInfo().TaskID; id != "" {
		s.taskID = id
	}
	switch e := ev.(type) {
	case *a2a.Message:
		s.done = true
		return s.reply.final(partsText(e.Parts))
	case *a2a.TaskArtifactUpdateEvent:
		if e.Artifact == nil {
			return nil
		}
		if e.Append {
			return s.reply.add(string(e.Artifact.ID), partsText(e.Artifact.Parts))
		}
		return s.reply.snapshot(string(e.Artifact.ID), partsText(e.Artifact.Parts))
	case *a2a.TaskStatusUpdateEvent:
		return s.status(e.Status, e.Final, false)
	case *a2a.Task:
		for _, a := range e.Artifacts {
			if a != nil {
				if err := s.reply.snapshot(string(a.ID), partsText(a.Parts)); err != nil {
					return err
				}
			}
		}
		if err := s.status(e.Status, false, true); err != nil {
			return err
		}
		if s.done && s.state == a2a.TaskStateCompleted && s.reply.empty() {
			return s.reply.final(lastAgentText(e.History))
		}
	}
	return nil
}

// status takes a task status. Text of a working status update is streamed
// (not that of a Task snapshot, which polling would repeat); that of the
// final status is the reply only if nothing came before it (or it repeats
// and extends it); that of a failure is the error's detail.
func (s *a2aTurn) status(st a2a.TaskStatus, final, snapshot bool) error {
	s.state = st.State
	text := ""
	if st.Message != nil {
		text = partsText(st.Message.Parts)
	}
	switch st.State {
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled, a2a.TaskStateAuthRequired:
		s.done, s.failText = true, text
		return nil
	case a2a.TaskStateCompleted, a2a.TaskStateInputRequired:
		s.done = true
		return s.reply.final(text)
	}
	switch {
	case final:
		s.done = true
		return s.reply.final(text)
	case snapshot:
		return nil
	}
	return s.reply.add("status", text)
}

// outcome is the turn's result once done: nil, or the task's failure.
func (s *a2aTurn) outcome() error {
	public := ""
	switch s.state {
	case a2a.TaskStateFailed:
		public = "the agent's task failed"
	case a2a.TaskStateRejected:
		public = "the agent rejected the task"
	case a2a.TaskStateCanceled:
		public = "the agent canceled the task"
	case a2a.TaskStateAuthRequired:
		return kindError(agent.ErrBackendRejected, agent.BackendA2A, "the agent asks for authorization, which this node cannot give")
	}
	if public != "" {
		if d := sanitize(s.failText, ""); d != "" {
			public = d
		}
		return kindError(agent.ErrBackendRejected, agent.BackendA2A, public)
	}
	if s.reply.empty() {
		return kindError(agent.ErrBadBackendReply, agent.BackendA2A, "the agent's reply has no text")
	}
	return nil
}

// a2aReply builds the reply from text that comes in pieces, per source (an
// artifact id, "status", "final"), emitting what is new. Pieces of
// different sources are separated by a line break.
type a2aReply struct {
	max     int
	emit    func(string) error
	out     strings.Builder
	sources map[string]*strings.Builder
	last    string // source of the last piece
}

func (r *a2aReply) empty() bool    { return r.out.Len() == 0 }
func (r *a2aReply) String() string { return r.out.String() }

// add appends s to source src.
func (r *a2aReply) add(src, s string) error {
	if s == "" {
		return nil
	}
	piece := s
	if r.out.Len() > 0 && src != r.last && !strings.HasSuffix(r.out.String(), "\n") {
		piece = "\n" + s
	}
	if r.out.Len()+len(piece) > r.max {
		return fmt.Errorf("%w: more than %d bytes", agent.ErrReplyTooLarge, r.max)
	}
	r.out.WriteString(piece)
	r.last = src
	b := r.sources[src]
	if b == nil {
		b = new(strings.Builder)
		r.sources[src] = b
	}
	b.WriteString(s)
	return r.emit(piece)
}

// snapshot sets source src to s, which agents send whole (a Task, an
// artifact update without append): only what extends the text already
// streamed is new. Text that replaces it cannot be unsaid; it is dropped.
func (r *a2aReply) snapshot(src, s string) error {
	prev := ""
	if b := r.sources[src]; b != nil {
		prev = b.String()
	}
	if rest, ok := strings.CutPrefix(s, prev); ok {
		return r.add(src, rest)
	}
	return nil
}

// final takes the text that ends a turn (a Message, the last status): the
// reply if there is none yet, or the part that extends it when it repeats
// what was streamed; otherwise (a closing remark like "done") it is dropped.
func (r *a2aReply) final(s string) error {
	cur := r.out.String()
	if cur == "" {
		return r.add("final", s)
	}
	if rest, ok := strings.CutPrefix(s, cur); ok {
		return r.add(r.last, rest)
	}
	return nil
}

// partsText joins the text parts; data parts are rendered as JSON, files
// skipped.
func partsText(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case a2a.TextPart:
			b.WriteString(p.Text)
		case a2a.DataPart:
			if j, err := json.Marshal(p.Data); err == nil {
				b.Write(j)
			}
		}
	}
	return b.String()
}

// lastAgentText is the text of the last agent message of a task's history,
// where some agents leave their answer.
func lastAgentText(history []*a2a.Message) string {
	for i := len(history) - 1; i >= 0; i-- {
		if m := history[i]; m != nil && m.Role == a2a.MessageRoleAgent {
			if t := partsText(m.Parts); t != "" {
				return t
			}
		}
	}
	return ""
}
