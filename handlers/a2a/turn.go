package a2a

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// turnSpec is one message to one agent.
type turnSpec struct {
	scope   string // the endpoint: the agent's id, or "" for the concierge
	agentID string
	msg     *a2a.Message
	text    string
	config  *a2a.MessageSendConfig
	trace   agent.Trace // from another agent that passed the message on
	who     caller      // who sent it: the task and the conversation are its
	push    *pushConfig // where to tell of the task's changes; nil: nowhere
	// approval answers the tool call the task waits to have approved
	approval *agent.ApprovalAnswer
}

// turn runs a message as a task. The contextId names the conversation:
// one of A2A's with this agent is continued, anything else starts a new
// one whose id the task carries. A message naming a task that waits for
// input (resume) is that task's next turn. The turn runs detached from
// the request (a client that goes away can still read the task), on the
// server's lifetime and within TurnTimeout.
func (s *Server) turn(w http.ResponseWriter, r *http.Request, c *call, spec turnSpec, resume *task) {
	contextID := spec.msg.ContextID
	if resume != nil {
		contextID = resume.contextID
	}
	conv, err := s.Chat.Open(r.Context(), spec.who.chatOwner, spec.agentID, contextID, spec.text)
	if err != nil {
		re, e := rpcError(err)
		if e != nil {
			s.logFailure(r.Context(), "A2A message refused", e, err)
		}
		c.fail(w, re)
		return
	}
	// Cancelable from the moment it can be found, before the turn starts.
	cctx, cancel := context.WithCancelCause(s.lifetime)
	t, rerr := s.startTask(spec, conv.ID, resume, cancel)
	if rerr != nil {
		cancel(nil)
		c.failAny(w, rerr)
		return
	}
	var events *events
	if c.stream {
		events = newEvents()
	}
	first, from := t.snapshotMark() // taken before the turn can change it
	if spec.push != nil && resume == nil {
		t.mu.Lock()
		s.startPushLocked(t, from)
		t.mu.Unlock()
	}
	done := t.turnDone()
	go s.run(t, cctx, cancel, spec, events)
	if c.stream {
		s.pipe(w, r, c, first, events)
		return
	}
	blocking := spec.config == nil || spec.config.Blocking == nil || *spec.config.Blocking
	if blocking {
		select {
		case <-done:
		case <-r.Context().Done():
			return // the task goes on; tasks/get shows how it ended
		}
	}
	var historyLength *int
	if spec.config != nil {
		historyLength = spec.config.HistoryLength
	}
	snap := t.snapshot(historyLength)
	if blocking && snap.Status.State == a2a.TaskStateCompleted && t.standsAlone() {
		c.ok(w, t.replyMessage())
		return
	}
	c.ok(w, snap)
}

// startTask is the task a turn runs as: a new one kept in the store, or
// resume's next turn. Either counts as a running turn (or is refused
// busy).
func (s *Server) startTask(spec turnSpec, contextID string, resume *task, cancel context.CancelCauseFunc) (*task, error) {
	if resume != nil {
		if err := s.tasks.started(); err != nil {
			return nil, err
		}
		if !resume.resume(spec.msg, cancel, s.now()) {
			s.tasks.ended()
			return nil, errTaskFinishedInput // it was resumed or canceled meanwhile
		}
		return resume, nil
	}
	t := newTask(spec.scope, spec.who.owner, spec.agentID, contextID, spec.msg, s.now())
	t.cancel = cancel
	if spec.push != nil {
		spec.push.taskID = t.id
		t.pushes = []pushConfig{*spec.push}
	}
	if err := s.tasks.add(t, s.now()); err != nil {
		return nil, err
	}
	return t, nil
}

// failAny answers err: an HTTP failure (busy) as such, anything else as
// its JSON-RPC error.
func (c *call) failAny(w http.ResponseWriter, err error) {
	var he *httpkit.Error
	if errors.As(err, &he) {
		c.failHTTP(w, he)
		return
	}
	re, _ := rpcError(err)
	c.fail(w, re)
}

// run runs one turn of t and records how it went: completed with the
// reply, waiting for input (the agent's prompt), canceled (tasks/cancel),
// or failed with a message for people (a failure of the agent is a failed
// task, not a JSON-RPC error). What the agent makes besides text
// (agent.Output) becomes the task's artifacts as it comes.
func (s *Server) run(t *task, cctx context.Context, cancel context.CancelCauseFunc, spec turnSpec, ev *events) {
	done := t.turnDone()
	defer ev.close()
	defer close(done)
	defer s.tasks.ended()
	defer cancel(nil)
	ctx, stop := context.WithTimeout(cctx, s.Config.TurnTimeout)
	defer stop()

	ev.send(t.begin(s.now()))
	req := chat.Request{AgentID: t.agentID, ConversationID: t.contextID, Text: spec.text, Trace: spec.trace,
		MessageID: spec.msg.ID, Approval: spec.approval, OnStep: func(st agent.Step) {
			if st.Done { // a step is told once, as it ends
				ev.send(t.step(st, s.now()))
			}
		}, Yield: func(o agent.Output) {
			if o.Message {
				t.standAlone()
			}
			if a := o.Artifact; a != nil {
				ev.send(t.addArtifact(a2aArtifact(a), a.Append, a.LastChunk))
			}
		}}
	res, err := s.Chat.Turn(ctx, spec.who.chatOwner, req,
		func(chunk string) error {
			if chunk != "" {
				ev.send(t.chunk(chunk))
			}
			return nil // a client that stopped reading does not stop the turn
		})
	switch {
	case err == nil && res.NeedsInput:
		ev.send(t.pause(res.Reply.Text, res.Approval, s.now()))
	case err == nil:
		art, final := t.complete(res.Reply.Text, s.now())
		if art != nil {
			ev.send(art)
		}
		ev.send(final)
	case errors.Is(context.Cause(cctx), errCancelRequested):
		ev.send(t.fail(a2a.TaskStateCanceled, "The task was canceled.", s.now()))
	default:
		e := httpkit.Classify(err)
		s.logFailure(ctx, "A2A turn failed", e, err)
		ev.send(t.fail(a2a.TaskStateFailed, e.Message, s.now()))
	}
}

// a2aArtifact is an agent's artifact as the task keeps it.
func a2aArtifact(a *agent.Artifact) *a2a.Artifact {
	out := &a2a.Artifact{ID: a2a.ArtifactID(a.ID), Name: a.Name, Parts: a2a.ContentParts{}}
	if out.ID == "" {
		out.ID = a2a.ArtifactID(newID())
	}
	for _, p := range a.Parts {
		switch {
		case p.File != nil && p.File.URL != "":
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileURI{
				FileMeta: a2a.FileMeta{Name: p.File.Name, MimeType: p.File.MediaType}, URI: p.File.URL}})
		case p.File != nil:
			out.Parts = append(out.Parts, a2a.FilePart{File: a2a.FileBytes{
				FileMeta: a2a.FileMeta{Name: p.File.Name, MimeType: p.File.MediaType}, Bytes: base64.StdEncoding.EncodeToString(p.File.Bytes)}})
		case p.Data != nil:
			out.Parts = append(out.Parts, a2a.DataPart{Data: p.Data})
		default:
			out.Parts = append(out.Parts, a2a.TextPart{Text: p.Text})
		}
	}
	return out
}

// pipe writes a message/stream answer: the task as it was submitted, then
// each event of the turn as it happens, until the final one. A client that
// stops reading is left behind; the turn goes on.
func (s *Server) pipe(w http.ResponseWriter, r *http.Request, c *call, first *a2a.Task, ev *events) {
	defer ev.leave()
	out := startSSE(w)
	if c.event(out, first) != nil {
		return
	}
	c.relay(r.Context(), out, ev.ch)
}

// events carries a turn's events to the stream that started it. Sending
// waits for the reader (a slow client slows the turn down, up to the
// write deadline), but never once the reader has left.
type events struct {
	ch       chan a2a.Event
	gone     chan struct{}
	goneOnce sync.Once
}

func newEvents() *events {
	return &events{ch: make(chan a2a.Event, 64), gone: make(chan struct{})}
}

func (e *events) send(ev a2a.Event) {
	if e == nil {
		return
	}
	select {
	case e.ch <- ev:
	case <-e.gone:
	}
}

// close ends the stream after the final event.
func (e *events) close() {
	if e != nil {
		close(e.ch)
	}
}

// leave tells the turn the reader is gone.
func (e *events) leave() { e.goneOnce.Do(func() { close(e.gone) }) }
