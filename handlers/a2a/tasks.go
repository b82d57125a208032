package a2a

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

// errBusy refuses a turn when MaxRunning turns are running already.
var errBusy = &httpkit.Error{Status: http.StatusServiceUnavailable, Code: "a2a_busy",
	Message: "This node is running as many A2A tasks as it can; try again in a few seconds.", RetryAfter: 5}

// errCancelRequested is the cause of a turn canceled by tasks/cancel.
var errCancelRequested = errors.New("a2a: task canceled by the client")

// task is an A2A task: one turn, or several when the agent asked for
// input and the caller answered on the same task. Its identity is fixed at
// creation; its state changes under mu while a turn runs, and snapshots
// are built from it (messages and artifacts, once made, are never changed,
// so snapshots share them).
type task struct {
	id        a2a.TaskID
	scope     string // the endpoint it was created on: an agent id, or "" for /a2a
	owner     string // the authenticated caller that made it; "" anonymous
	agentID   string
	contextID string
	created   time.Time

	mu    sync.Mutex
	done  chan struct{} // closed when the running turn has ended; a new one for each turn
	state a2a.TaskState
	stamp time.Time
	// status is the status message: why it failed, or what the agent
	// asks for when it waits for input.
	status  *a2a.Message
	history []*a2a.Message
	// round counts the turns run on the task; a follower's mark names the
	// round its offset in the reply text is of.
	round int
	// The running (or last) turn's reply: its artifact, its text as it
	// streams and once whole, and a data part (the concierge's matches).
	artifactID a2a.ArtifactID
	streamed   strings.Builder
	reply      *string
	data       map[string]any
	// artifacts are what the agent made (agent.Output) and the replies of
	// earlier turns, in order; made, the events that made the agent's,
	// which followers replay.
	artifacts []*a2a.Artifact
	made      []*a2a.TaskArtifactUpdateEvent
	// message: the agent's reply stands alone (agent.Output.Message); a
	// send answers it as a Message rather than the task.
	message  bool
	cancel   context.CancelCauseFunc
	changed  chan struct{} // closed, and replaced, at every change
	watchers int           // streams following the task (SubscribeToTask)
	pushes   []pushConfig  // where to tell of its changes
	pushing  bool          // its one push follower runs (pushChanges)
}

// changedLocked wakes whoever follows the task; t.mu is held.
func (t *task) changedLocked() {
	close(t.changed)
	t.changed = make(chan struct{})
}

// newID is a random identifier for a task or an artifact: 130 bits, since
// a task id is what lets anyone read or cancel it.
func newID() string { return rand.Text() }

func newTask(scope, owner, agentID, contextID string, msg *a2a.Message, now time.Time) *task {
	t := &task{
		id: a2a.TaskID(newID()), scope: scope, owner: owner, agentID: agentID, contextID: contextID,
		artifactID: a2a.ArtifactID(newID()), created: now, done: make(chan struct{}), round: 1,
		state: a2a.TaskStateSubmitted, stamp: now, changed: make(chan struct{}),
	}
	t.history = []*a2a.Message{t.userMessage(msg)}
	return t
}

// userMessage is msg as the task's history keeps it.
func (t *task) userMessage(msg *a2a.Message) *a2a.Message {
	m := *msg
	m.TaskID, m.ContextID = t.id, t.contextID
	if m.ID == "" {
		m.ID = newID()
	}
	m.Role = a2a.MessageRoleUser
	return &m
}

// turnDone is closed when the task's running turn has ended.
func (t *task) turnDone() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.done
}

// resume starts the next turn of a task that waits for input, with the
// caller's message msg; false when the task does not wait for input (it
// is running, or has ended).
func (t *task) resume(msg *a2a.Message, cancel context.CancelCauseFunc, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != a2a.TaskStateInputRequired {
		return false
	}
	t.history = append(t.history, t.userMessage(msg))
	t.round++
	t.artifactID, t.reply, t.data, t.message = a2a.ArtifactID(newID()), nil, nil, false
	t.streamed.Reset()
	t.done, t.cancel, t.status = make(chan struct{}), cancel, nil
	t.state, t.stamp = a2a.TaskStateSubmitted, now
	t.changedLocked()
	return true
}

// snapshot is the task as the protocol shows it, with at most
// historyLength messages of its history (nil: all).
func (t *task) snapshot(historyLength *int) *a2a.Task {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(historyLength)
}

// mark is where a follower starts: the round and how much of its reply
// it has, how many of the agent's artifact events, and the state it has
// seen.
type mark struct {
	round, sent, made int
	state             a2a.TaskState
}

// snapshotMark is the task as it is and the mark of that snapshot, taken
// together so that a follower starting there misses no change.
func (t *task) snapshotMark() (*a2a.Task, mark) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(nil), t.markLocked()
}

func (t *task) markLocked() mark {
	return mark{round: t.round, sent: len(t.textLocked()), made: len(t.made), state: t.state}
}

func (t *task) snapshotLocked(historyLength *int) *a2a.Task {
	stamp := t.stamp
	out := &a2a.Task{
		ID: t.id, ContextID: t.contextID,
		Status:    a2a.TaskStatus{State: t.state, Message: t.status, Timestamp: &stamp},
		History:   slices.Clone(t.history),
		Artifacts: slices.Clone(t.artifacts),
	}
	if t.agentID != "" && t.scope == "" {
		// The concierge's task names the agent it went to; on an agent's
		// own url the agent is the endpoint.
		out.Metadata = map[string]any{"agent_id": t.agentID}
	}
	if historyLength != nil {
		out.History = out.History[len(out.History)-min(max(*historyLength, 0), len(out.History)):]
	}
	if a := t.replyArtifactLocked(); a != nil {
		out.Artifacts = append(out.Artifacts, a)
	}
	return out
}

// replyArtifactLocked is the running turn's reply as an artifact; nil
// while it has no text.
func (t *task) replyArtifactLocked() *a2a.Artifact {
	text := t.streamed.String()
	if t.reply != nil {
		text = *t.reply
	}
	if text == "" {
		return nil
	}
	parts := a2a.ContentParts{a2a.TextPart{Text: text}}
	if t.data != nil {
		parts = append(parts, a2a.DataPart{Data: t.data})
	}
	return &a2a.Artifact{ID: t.artifactID, Name: "reply", Parts: parts}
}

// text is the reply so far: the whole reply once there is one and nothing
// streamed, what streamed otherwise. t.mu is held.
func (t *task) textLocked() string {
	if t.reply != nil && t.streamed.Len() == 0 {
		return *t.reply
	}
	return t.streamed.String()
}

// begin marks the task working.
func (t *task) begin(now time.Time) *a2a.TaskStatusUpdateEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state, t.stamp = a2a.TaskStateWorking, now
	t.changedLocked()
	return t.statusEvent(false)
}

// chunk records streamed text and returns its event: the first chunk
// creates the reply artifact, the others append to it.
func (t *task) chunk(text string) *a2a.TaskArtifactUpdateEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := t.streamed.Len() == 0
	t.streamed.WriteString(text)
	t.changedLocked()
	return t.artifactEvent(text, !first)
}

func (t *task) artifactEvent(text string, appendIt bool) *a2a.TaskArtifactUpdateEvent {
	return &a2a.TaskArtifactUpdateEvent{
		TaskID: t.id, ContextID: t.contextID, Append: appendIt,
		Artifact: &a2a.Artifact{ID: t.artifactID, Name: "reply", Parts: a2a.ContentParts{a2a.TextPart{Text: text}}},
	}
}

// addArtifact records an artifact the agent made (a chunk of one appends to it)
// and returns its event.
func (t *task) addArtifact(a *a2a.Artifact, appendIt, last bool) *a2a.TaskArtifactUpdateEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	ev := &a2a.TaskArtifactUpdateEvent{TaskID: t.id, ContextID: t.contextID, Append: appendIt, LastChunk: last, Artifact: a}
	t.made = append(t.made, ev)
	i := slices.IndexFunc(t.artifacts, func(old *a2a.Artifact) bool { return old.ID == a.ID })
	switch {
	case i < 0:
		t.artifacts = append(t.artifacts, a)
	case appendIt:
		whole := *t.artifacts[i]
		whole.Parts = append(slices.Clip(whole.Parts), a.Parts...)
		t.artifacts[i] = &whole
	default:
		t.artifacts[i] = a
	}
	t.changedLocked()
	return ev
}

// standAlone marks the agent's reply as a message that stands alone.
func (t *task) standAlone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.message = true
}

// standsAlone: the agent said its reply is a message that stands alone.
func (t *task) standsAlone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.message
}

// complete ends the task with the agent's reply, which joins the history.
// When nothing streamed (a backend that answers in one piece) it also
// returns the artifact event carrying the reply.
func (t *task) complete(reply string, now time.Time) (*a2a.TaskArtifactUpdateEvent, *a2a.TaskStatusUpdateEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var art *a2a.TaskArtifactUpdateEvent
	if t.streamed.Len() == 0 && reply != "" {
		art = t.artifactEvent(reply, false)
	}
	t.reply = &reply
	t.history = append(t.history, t.agentMessage(reply))
	t.finish(a2a.TaskStateCompleted, nil, now)
	return art, t.statusEvent(true)
}

// step records a finished step of the turn (a tool call, a question to
// another agent, a search of the planet) in the history: a message of the
// agent's with a line for people and the step itself as data, marked
// "agentsite_step" in its metadata. It returns the working status that
// tells the task's followers of it.
func (t *task) step(s agent.Step, now time.Time) *a2a.TaskStatusUpdateEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := map[string]any{}
	if b, err := json.Marshal(s); err == nil {
		_ = json.Unmarshal(b, &data)
	}
	msg := &a2a.Message{ID: newID(), Role: a2a.MessageRoleAgent, TaskID: t.id, ContextID: t.contextID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: stepLine(s)}, a2a.DataPart{Data: data}}, Metadata: map[string]any{"agentsite_step": true}}
	t.history = append(t.history, msg)
	t.status, t.stamp = msg, now
	t.changedLocked()
	return t.statusEvent(false)
}

// stepLine is a step as one line for people.
func stepLine(s agent.Step) string {
	var line string
	switch s.Tool {
	case "call_tool":
		line = "Called " + s.Name + " on " + s.Server
	case "ask_agent":
		who := s.AgentName
		if who == "" {
			who = s.AgentID
		}
		line = "Asked " + who
	case "find_agents":
		line = "Searched the planet for " + strconv.Quote(s.Text)
	default:
		line = s.Tool
	}
	if s.Error != "" {
		return line + ": failed: " + s.Error
	}
	return line
}

// agentMessage is text from the agent, as history and status keep it.
func (t *task) agentMessage(text string) *a2a.Message {
	return &a2a.Message{ID: newID(), Role: a2a.MessageRoleAgent, TaskID: t.id, ContextID: t.contextID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
}

// reply is the agent's reply as a message that stands alone (a send's
// answer when the agent said so).
func (t *task) replyMessage() *a2a.Message {
	t.mu.Lock()
	defer t.mu.Unlock()
	text := ""
	if t.reply != nil {
		text = *t.reply
	}
	return &a2a.Message{ID: newID(), Role: a2a.MessageRoleAgent, ContextID: t.contextID, Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
}

// pause ends the turn with the agent asking for input: prompt is the
// status message and joins the history. The reply so far stays an
// artifact of the task; the next turn's goes in a new one.
func (t *task) pause(prompt string, approval *agent.Approval, now time.Time) *a2a.TaskStatusUpdateEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a := t.replyArtifactLocked(); a != nil {
		t.artifacts = append(t.artifacts, a)
	}
	t.streamed.Reset()
	t.reply, t.data = nil, nil
	msg := t.agentMessage(prompt)
	if approval != nil {
		// The call waiting, as data a client can show and answer.
		msg.Parts = append(msg.Parts, a2a.DataPart{Data: map[string]any{ApprovalDataKey: map[string]any{
			"id": approval.ID, "tool": approval.Tool, "server": approval.Server, "args": approval.Args,
			"expires_at": approval.ExpiresAt.UTC().Format(time.RFC3339),
			"answer":     `send a message on this task: "approve" or "deny", or a data part {"approval": {"id": "` + approval.ID + `", "approve": true}}`,
		}}})
	}
	t.history = append(t.history, msg)
	t.finish(a2a.TaskStateInputRequired, msg, now)
	return t.statusEvent(true)
}

// fail ends the task in state (failed or canceled) with why, for people.
func (t *task) fail(state a2a.TaskState, why string, now time.Time) *a2a.TaskStatusUpdateEvent {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.finish(state, t.agentMessage(why), now)
	return t.statusEvent(true)
}

// cancelWaiting cancels a task that waits for input (no turn runs to
// cancel); false when it does not wait.
func (t *task) cancelWaiting(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != a2a.TaskStateInputRequired {
		return false
	}
	t.finish(a2a.TaskStateCanceled, t.agentMessage("The task was canceled."), now)
	return true
}

// finish ends the running turn in state; t.mu is held.
func (t *task) finish(state a2a.TaskState, status *a2a.Message, now time.Time) {
	t.state, t.status, t.stamp, t.cancel = state, status, now, nil
	t.changedLocked()
}

// statusEvent is the task's state as an event; final ends a stream (a
// turn's end: its task ended, or waits for input).
func (t *task) statusEvent(final bool) *a2a.TaskStatusUpdateEvent {
	stamp := t.stamp
	return &a2a.TaskStatusUpdateEvent{TaskID: t.id, ContextID: t.contextID, Final: final,
		Status: a2a.TaskStatus{State: t.state, Message: t.status, Timestamp: &stamp}}
}

// requestCancel cancels the running turn; false when it has ended.
func (t *task) requestCancel() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel == nil {
		return false
	}
	t.cancel(errCancelRequested)
	return true
}

func (t *task) currentState() a2a.TaskState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.state
}

// taskStore keeps tasks for tasks/get and tasks/cancel: at most max, the
// least recently used dropped first, none older than ttl once ended. It is
// golang-lru's simplelru under one mutex, with the age checked when a task
// is read or the oldest is pruned: a2a-go's in-memory store cannot be
// bounded, and expirable's cleaner goroutine never stops.
type taskStore struct {
	mu         sync.Mutex
	lru        *simplelru.LRU[a2a.TaskID, *task]
	ttl        time.Duration
	running    int
	maxRunning int
}

func newTaskStore(maxTasks, maxRunning int, ttl time.Duration) *taskStore {
	lru, err := simplelru.NewLRU[a2a.TaskID, *task](maxTasks, nil)
	if err != nil { // only for a size below 1, which New rules out
		panic(err)
	}
	return &taskStore{lru: lru, ttl: ttl, maxRunning: maxRunning}
}

// add keeps a task that is about to run, or refuses it (errBusy).
func (ts *taskStore) add(t *task, now time.Time) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.running >= ts.maxRunning {
		return errBusy
	}
	for {
		_, old, ok := ts.lru.GetOldest()
		if !ok || !ts.expired(old, now) {
			break
		}
		ts.lru.RemoveOldest()
	}
	ts.running++
	ts.lru.Add(t.id, t)
	return nil
}

// started counts the next turn of a task that waits for input in,
// or refuses it (errBusy).
func (ts *taskStore) started() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.running >= ts.maxRunning {
		return errBusy
	}
	ts.running++
	return nil
}

// ended counts a turn out of the running ones.
func (ts *taskStore) ended() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.running--
}

// get finds task id created on scope by owner; nil when there is none (or
// it is another endpoint's: tasks of one agent are not reachable through
// another; or another caller's: an authenticated caller's tasks are its
// own, and anonymous tasks are reached by their id alone).
func (ts *taskStore) get(id a2a.TaskID, scope, owner string, now time.Time) *task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.lru.Get(id)
	switch {
	case !ok:
		return nil
	case ts.expired(t, now):
		ts.lru.Remove(id)
		return nil
	case t.scope != scope, t.owner != owner:
		return nil
	}
	return t
}

// listQuery selects tasks for ListTasks.
type listQuery struct {
	scope, owner, contextID string
	state                   a2a.TaskState // "": any
	after                   *time.Time    // status changed after
}

// list is the tasks q selects, newest first.
func (ts *taskStore) list(q listQuery, now time.Time) []*task {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var out []*task
	for _, t := range ts.lru.Values() {
		if t.scope != q.scope || t.owner != q.owner || ts.expired(t, now) ||
			q.contextID != "" && t.contextID != q.contextID {
			continue
		}
		t.mu.Lock()
		state, stamp := t.state, t.stamp
		t.mu.Unlock()
		if q.state != "" && state != q.state || q.after != nil && !stamp.After(*q.after) {
			continue
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b *task) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return strings.Compare(string(a.id), string(b.id))
	})
	return out
}

func (ts *taskStore) expired(t *task, now time.Time) bool {
	select {
	case <-t.turnDone():
		return now.Sub(t.created) > ts.ttl
	default:
		return false // a running turn is bounded by its own timeout
	}
}
