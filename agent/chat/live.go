package chat

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Default bounds of Live.
const (
	DefaultLiveMaxPerOwner = 4
	DefaultLiveMaxTotal    = 256
	DefaultLiveMaxDuration = 10 * time.Minute
)

// ErrTooManyReplies refuses a turn while too many replies are on their
// way, for this owner or on the whole node.
var ErrTooManyReplies = agent.NewError(agent.KindRateLimited, agent.CodeRateLimited,
	"Too many replies are on their way; wait for one to finish or stop it.")

// Live runs the turns of pages (AgentChat) apart from the page that asked:
// a reply outlives its socket, is stored when it ends, and a page opened
// meanwhile attaches to it (the text so far, then the rest as it comes).
// It keeps a turn only while it runs, and bounds how many run (per owner
// and in all) and for how long. Set Chat and Lifetime before use.
type Live struct {
	Chat *Chat
	// Lifetime ends every turn when it ends (the server shuts down).
	Lifetime context.Context
	// Bounds; zero: the defaults above.
	MaxPerOwner int
	MaxTotal    int
	MaxDuration time.Duration
	Logger      *slog.Logger

	mu     sync.Mutex
	all    map[*LiveTurn]struct{}
	byConv map[string]*LiveTurn
	owners map[Owner]int
	held   int // turns counted by Hold
}

// Event is what a subscriber of a live turn hears, one field set:
// Started once the message is stored (the conversation), Chunk of the
// reply, Step of a delegation, Wait in the model's queue, End when the
// turn ended.
type Event struct {
	// Resume is the reply so far: the first event an attached subscriber
	// hears (Attach).
	Resume  *string
	Started *store.Conversation
	Chunk   string
	Step    *agent.Step
	// Wait is how many requests are ahead in the model's queue while
	// the turn waits there, -1 once it no longer does.
	Wait *int
	End  *LiveEnd
}

// LiveEnd is how a live turn ended: Turn's result and error, and whether a
// chunk of the reply streamed (the agent got the message).
type LiveEnd struct {
	Result   Result
	Err      error
	Streamed bool
}

// LiveTurn is one turn in flight.
type LiveTurn struct {
	owner  Owner
	cancel context.CancelCauseFunc
	done   chan struct{}

	mu       sync.Mutex
	convID   string
	text     strings.Builder
	streamed bool
	ended    bool
	subs     map[uint64]func(Event)
	nextSub  uint64
}

func (lv *Live) bounds() (perOwner, total int, d time.Duration) {
	perOwner, total, d = lv.MaxPerOwner, lv.MaxTotal, lv.MaxDuration
	if perOwner <= 0 {
		perOwner = DefaultLiveMaxPerOwner
	}
	if total <= 0 {
		total = DefaultLiveMaxTotal
	}
	if d <= 0 {
		d = DefaultLiveMaxDuration
	}
	return perOwner, total, d
}

// Start runs a turn of owner detached from ctx's end (it keeps ctx's
// values): it ends when the turn does, when it is stopped, when Lifetime
// ends, or after MaxDuration. sub (if not nil) hears the turn's events
// from the start; Subscribe adds others. A message to a conversation
// whose reply is still on its way is ErrReplyPending; over a bound,
// ErrTooManyReplies. The caller must call unsubscribe when it stops
// listening (it leaves the turn running).
func (lv *Live) Start(ctx context.Context, owner Owner, req Request, sub func(Event)) (t *LiveTurn, unsubscribe func(), err error) {
	perOwner, total, maxDur := lv.bounds()
	t = &LiveTurn{owner: owner, done: make(chan struct{}), subs: map[uint64]func(Event){}, convID: req.ConversationID}
	unsubscribe = func() {}
	if sub != nil {
		unsubscribe = t.add(sub)
	}
	lifetime := lv.Lifetime
	if lifetime == nil {
		lifetime = context.Background()
	}
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	t.cancel = cancel
	lv.mu.Lock()
	switch {
	case req.ConversationID != "" && lv.byConv[req.ConversationID] != nil:
		lv.mu.Unlock()
		cancel(nil)
		return nil, nil, ErrReplyPending
	case len(lv.all)+lv.held >= total || lv.owners[owner] >= perOwner:
		lv.mu.Unlock()
		cancel(nil)
		return nil, nil, ErrTooManyReplies
	}
	if lv.all == nil {
		lv.all, lv.byConv, lv.owners = map[*LiveTurn]struct{}{}, map[string]*LiveTurn{}, map[Owner]int{}
	}
	lv.all[t] = struct{}{}
	lv.owners[owner]++
	if req.ConversationID != "" {
		lv.byConv[req.ConversationID] = t
	}
	lv.mu.Unlock()

	stopWithLifetime := context.AfterFunc(lifetime, func() { cancel(context.Canceled) })
	tctx, cancelTimeout := context.WithTimeout(cctx, maxDur)
	req.OnStarted = func(c store.Conversation) { lv.started(t, c) }
	req.OnStep = func(s agent.Step) { t.publish(Event{Step: &s}) }
	req.OnWait = func(n int) { t.publish(Event{Wait: &n}) }
	emit := func(chunk string) error {
		if chunk != "" {
			t.chunk(chunk)
		}
		return nil
	}
	go func() {
		defer close(t.done)
		defer stopWithLifetime()
		defer cancel(nil)
		defer cancelTimeout()
		end := lv.run(tctx, owner, req, emit)
		end.Streamed = t.hasStreamed()
		lv.finish(t, end)
	}()
	return t, unsubscribe, nil
}

// Hold counts a turn that runs outside Live (a synchronous turn of the
// JSON API, whose anonymous callers share one owner) under key, against
// the same bounds as Start's turns: over them it is ErrTooManyReplies.
// The caller calls release once the turn ended.
func (lv *Live) Hold(key Owner) (release func(), err error) {
	perOwner, total, _ := lv.bounds()
	lv.mu.Lock()
	defer lv.mu.Unlock()
	if len(lv.all)+lv.held >= total || lv.owners[key] >= perOwner {
		return nil, ErrTooManyReplies
	}
	if lv.all == nil {
		lv.all, lv.byConv, lv.owners = map[*LiveTurn]struct{}{}, map[string]*LiveTurn{}, map[Owner]int{}
	}
	lv.held++
	lv.owners[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			lv.mu.Lock()
			defer lv.mu.Unlock()
			lv.held--
			if lv.owners[key]--; lv.owners[key] <= 0 {
				delete(lv.owners, key)
			}
		})
	}, nil
}

// run is the turn itself; a panic in it (a backend bug) ends it with an
// internal error instead of the process.
func (lv *Live) run(ctx context.Context, owner Owner, req Request, emit func(string) error) (end *LiveEnd) {
	defer func() {
		if v := recover(); v != nil {
			lv.logger().Error("panic in chat turn", "agent", req.AgentID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			end = &LiveEnd{Err: fmt.Errorf("chat turn: panic: %v", v)}
		}
	}()
	res, err := lv.Chat.Turn(ctx, owner, req, emit)
	return &LiveEnd{Result: res, Err: err}
}

func (lv *Live) logger() *slog.Logger {
	if lv.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return lv.Logger
}

// started files t under its (new) conversation and tells subscribers.
func (lv *Live) started(t *LiveTurn, c store.Conversation) {
	lv.mu.Lock()
	if _, ok := lv.all[t]; ok {
		lv.byConv[c.ID] = t
	}
	lv.mu.Unlock()
	t.mu.Lock()
	t.convID = c.ID
	t.mu.Unlock()
	t.publish(Event{Started: &c})
}

// finish forgets t, then tells its subscribers how it ended: a page that
// loads after this finds the stored reply, not the turn.
func (lv *Live) finish(t *LiveTurn, end *LiveEnd) {
	lv.mu.Lock()
	delete(lv.all, t)
	if lv.owners[t.owner]--; lv.owners[t.owner] <= 0 {
		delete(lv.owners, t.owner)
	}
	t.mu.Lock()
	if t.convID != "" && lv.byConv[t.convID] == t {
		delete(lv.byConv, t.convID)
	}
	t.mu.Unlock()
	lv.mu.Unlock()

	t.mu.Lock()
	defer t.mu.Unlock()
	t.ended = true
	for _, s := range t.subs {
		s(Event{End: end})
	}
	t.subs = nil
	t.text.Reset()
}

// lookup is owner's turn in flight in conversation convID.
func (lv *Live) lookup(owner Owner, convID string) *LiveTurn {
	if convID == "" {
		return nil
	}
	lv.mu.Lock()
	defer lv.mu.Unlock()
	t := lv.byConv[convID]
	if t == nil || t.owner != owner {
		return nil
	}
	return t
}

// Attach subscribes sub to owner's turn in flight in conversation convID:
// sub first hears the reply so far (Event.Resume), then what follows. ok
// is false when no reply is on its way there (it ended, or never started).
func (lv *Live) Attach(owner Owner, convID string, sub func(Event)) (unsubscribe func(), ok bool) {
	t := lv.lookup(owner, convID)
	if t == nil {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil, false
	}
	so := t.text.String()
	sub(Event{Resume: &so})
	return t.addLocked(sub), true
}

// InFlight reports whether a reply is on its way in owner's conversation
// convID, and its text so far.
func (lv *Live) InFlight(owner Owner, convID string) (text string, ok bool) {
	t := lv.lookup(owner, convID)
	if t == nil {
		return "", false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.text.String(), !t.ended
}

// Stop stops owner's turn in flight in conversation convID, if any: the
// backend's context is canceled with ErrStopped and the turn ends stored
// as stopped, with its partial reply.
func (lv *Live) Stop(owner Owner, convID string) bool {
	t := lv.lookup(owner, convID)
	if t == nil {
		return false
	}
	t.Stop()
	return true
}

// Len is the number of turns in flight.
func (lv *Live) Len() int {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return len(lv.all)
}

// Stop stops t (see Live.Stop).
func (t *LiveTurn) Stop() { t.cancel(ErrStopped) }

// Done is closed once t ended and its subscribers heard so.
func (t *LiveTurn) Done() <-chan struct{} { return t.done }

// ConversationID is t's conversation, "" until its message is stored.
func (t *LiveTurn) ConversationID() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.convID
}

func (t *LiveTurn) add(sub func(Event)) func() {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.addLocked(sub)
}

func (t *LiveTurn) addLocked(sub func(Event)) func() {
	id := t.nextSub
	t.nextSub++
	t.subs[id] = sub
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		delete(t.subs, id) // a no-op once the turn ended (subs is nil)
	}
}

// publish tells every subscriber of e, in order: subscribers are called
// one at a time, under t's lock, so an attach sees each chunk exactly once.
func (t *LiveTurn) publish(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.subs {
		s(e)
	}
}

func (t *LiveTurn) chunk(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.text.WriteString(text)
	t.streamed = true
	for _, s := range t.subs {
		s(Event{Chunk: text})
	}
}

func (t *LiveTurn) hasStreamed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.streamed
}
