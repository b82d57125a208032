package a2a

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"
)

// Limits of following tasks and of listing them.
const (
	maxWatchers     = 4   // SubscribeToTask streams on one task at once
	defaultPageSize = 50  // ListTasks without pageSize
	maxPageSize     = 100 // ListTasks' largest page, as the specification says
)

var errTooManyWatchers = &RPCError{Code: CodeServerError, status: http.StatusTooManyRequests, Data: &ErrorData{Code: errBusy.Code},
	Message: "This task has as many subscribers as it takes; read it with GetTask (tasks/get) instead."}

// follow calls emit with every change of t from now on: the reply's new
// text as an artifact event, each new state as a status event, until the
// final one or until ctx ends. Changes that come faster than emit returns
// are merged into one event, so a slow follower holds nothing but its
// place in the text.
func (t *task) follow(ctx context.Context, from mark, emit func(a2a.Event) error) {
	round, sent, made, state := from.round, from.sent, from.made, from.state
	for {
		t.mu.Lock()
		ch := t.changed
		text := t.textLocked()
		var events []a2a.Event
		if t.round != round { // a turn that resumed the task: its reply starts anew
			round, sent = t.round, 0
		}
		for _, e := range t.made[made:] {
			events = append(events, e)
		}
		made = len(t.made)
		if len(text) > sent {
			events = append(events, t.artifactEvent(text[sent:], sent > 0))
			sent = len(text)
		}
		terminal := t.state.Terminal()
		if t.state != state {
			state = t.state
			events = append(events, t.statusEvent(terminal))
		}
		t.mu.Unlock()
		for _, e := range events {
			if emit(e) != nil {
				return
			}
		}
		if terminal {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// subscribe is tasks/resubscribe (SubscribeToTask): the task as it is,
// then each of its changes, until it ends.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request, c *call, who caller, scope string, id a2a.TaskID) {
	t := s.tasks.get(id, scope, who.owner, s.now())
	if t == nil {
		c.fail(w, errTaskNotFound)
		return
	}
	t.mu.Lock()
	ended, full := t.state.Terminal(), t.watchers >= maxWatchers
	if !ended && !full {
		t.watchers++
	}
	t.mu.Unlock()
	switch {
	case ended:
		c.fail(w, errNoResubscribe)
		return
	case full:
		c.fail(w, errTooManyWatchers)
		return
	}
	defer func() {
		t.mu.Lock()
		t.watchers--
		t.mu.Unlock()
	}()
	snap, from := t.snapshotMark()
	out := startSSE(w)
	if c.event(out, snap) != nil {
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	events := make(chan a2a.Event)
	go func() {
		defer close(events)
		t.follow(ctx, from, func(e a2a.Event) error {
			select {
			case events <- e:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	c.relay(ctx, out, events)
}

// listTasks is ListTasks: the caller's own tasks on this endpoint, newest
// first, a page at a time. An anonymous caller has no tasks of its own to
// list; it may list those of a contextId it knows (the id is the
// capability), as that context's other tasks are reached by id anyway.
func (s *Server) listTasks(w http.ResponseWriter, c *call, who caller, scope string, q v1.ListTasksRequest) {
	size := q.PageSize
	switch {
	case size == 0:
		size = defaultPageSize
	case size < 0 || size > maxPageSize:
		c.fail(w, invalidParams("pageSize must be between 1 and 100."))
		return
	}
	if q.HistoryLength != nil && *q.HistoryLength < 0 {
		c.fail(w, invalidParams("historyLength must not be negative."))
		return
	}
	offset := 0
	if q.PageToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(q.PageToken)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			c.fail(w, invalidParams("pageToken is not one this node gave: send the nextPageToken of the last page, or none."))
			return
		}
		offset = n
	}
	lq := listQuery{scope: scope, owner: who.owner, contextID: q.ContextID, after: q.StatusTimestampAfter}
	if q.Status != v1.TaskStateUnspecified && q.Status != "UNRECOGNIZED" { // a2a-js sends UNRECOGNIZED for no status
		if lq.state = v03State(q.Status); lq.state == "" {
			c.fail(w, invalidParams("status is not a task state."))
			return
		}
	}
	resp := &v1.ListTasksResponse{Tasks: []*v1.Task{}, PageSize: size}
	if who.owner != "" || q.ContextID != "" {
		all := s.tasks.list(lq, s.now())
		resp.TotalSize = len(all)
		end := min(offset+size, len(all))
		for _, t := range all[min(offset, len(all)):end] {
			snap := v1Task(t.snapshot(q.HistoryLength))
			if !q.IncludeArtifacts {
				snap.Artifacts = nil
			}
			resp.Tasks = append(resp.Tasks, snap)
		}
		if end < len(all) {
			resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
		}
	}
	c.ok(w, resp)
}
