package chat_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/internal/waitfor"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// gate is a backend turn that streams what it is told and ends when
// told, or when its context ends (it records why).
type gate struct {
	chunks chan string
	finish chan string
	mu     sync.Mutex
	ended  []error // the context's error of each turn that saw its end
}

func newGate() *gate { return &gate{chunks: make(chan string), finish: make(chan string)} }

func (g *gate) fn(ctx context.Context, emit func(string) error) (string, error) {
	var sent strings.Builder
	for {
		select {
		case c := <-g.chunks:
			sent.WriteString(c)
			if err := emit(c); err != nil {
				return sent.String(), err
			}
		case last := <-g.finish:
			return sent.String() + last, nil
		case <-ctx.Done():
			g.mu.Lock()
			g.ended = append(g.ended, ctx.Err())
			g.mu.Unlock()
			return "", ctx.Err()
		}
	}
}

func (g *gate) canceled() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.ended)
}

// events collects a subscriber's events.
type events struct {
	mu  sync.Mutex
	all []chat.Event
}

func (e *events) sub(ev chat.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) text() (resume, chunks string, end *chat.LiveEnd, started string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.all {
		switch {
		case ev.Resume != nil:
			resume = *ev.Resume
		case ev.Started != nil:
			started = ev.Started.ID
		case ev.End != nil:
			end = ev.End
		case ev.Step == nil:
			chunks += ev.Chunk
		}
	}
	return resume, chunks, end, started
}

func newLive(t *testing.T) (*node, *chat.Live, *gate, string) {
	n := newNode(t, sqlitetest.Open(t))
	id := n.register(t, "", "live").Record.ID
	g := newGate()
	n.local.fn = g.fn
	return n, &chat.Live{Chat: n.Chat, Lifetime: t.Context()}, g, id
}

// TestLiveTurnOutlivesItsListener: a turn goes on when its subscriber
// leaves, a later Attach gets the text so far and the rest, the reply is
// stored, and the registry forgets the turn when it ends.
func TestLiveTurnOutlivesItsListener(t *testing.T) {
	n, lv, g, id := newLive(t)
	owner := chat.AnonOwner("a")
	var first events
	turn, unsub, err := lv.Start(t.Context(), owner, chat.Request{AgentID: id, Text: "hi"}, first.sub)
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the started event", func() bool { _, _, _, s := first.text(); return s != "" })
	_, _, _, convID := first.text()
	if turn.ConversationID() != convID {
		t.Errorf("ConversationID %q, want %q", turn.ConversationID(), convID)
	}
	g.chunks <- "Hel"
	waitfor.Until(t, 10*time.Second, "the first chunk", func() bool { _, c, _, _ := first.text(); return c == "Hel" })
	unsub() // the page went away
	g.chunks <- "lo "
	waitfor.Until(t, 10*time.Second, "the text so far in flight", func() bool { text, ok := lv.InFlight(owner, convID); return ok && text == "Hello " })
	if _, ok := lv.InFlight(chat.AnonOwner("someone-else"), convID); ok {
		t.Error("another owner sees the turn")
	}
	var second events
	if _, ok := lv.Attach(chat.AnonOwner("someone-else"), convID, second.sub); ok {
		t.Fatal("another owner attached")
	}
	unsub2, ok := lv.Attach(owner, convID, second.sub)
	if !ok {
		t.Fatal("Attach found no turn")
	}
	defer unsub2()
	g.chunks <- "there"
	g.finish <- ""
	<-turn.Done()
	resume, chunks, end, _ := second.text()
	if resume != "Hello " || chunks != "there" || end == nil || end.Err != nil || end.Result.Reply.Text != "Hello there" {
		t.Errorf("attached: resume %q, chunks %q, end %+v", resume, chunks, end)
	}
	if _, c, e, _ := first.text(); c != "Hel" || e != nil {
		t.Errorf("the first listener heard %q and end %v after leaving", c, e)
	}
	wantMessages(t, n.Store, convID, "user: hi", "agent: Hello there")
	if lv.Len() != 0 {
		t.Errorf("%d turns kept after the end", lv.Len())
	}
	if _, ok := lv.InFlight(owner, convID); ok {
		t.Error("a finished turn is still in flight")
	}
	if _, ok := lv.Attach(owner, convID, second.sub); ok {
		t.Error("Attach to a finished turn")
	}
}

// TestLiveStop: Stop cancels the backend's context with ErrStopped, and
// the conversation keeps what streamed, then the stop.
func TestLiveStop(t *testing.T) {
	n, lv, g, id := newLive(t)
	owner := chat.AnonOwner("a")
	var ev events
	turn, unsub, err := lv.Start(t.Context(), owner, chat.Request{AgentID: id, Text: "long story"}, ev.sub)
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	g.chunks <- "Once upon"
	convID := turn.ConversationID()
	if lv.Stop(chat.AnonOwner("b"), convID) {
		t.Error("another owner stopped the turn")
	}
	if !lv.Stop(owner, convID) {
		t.Fatal("Stop found no turn")
	}
	<-turn.Done()
	if g.canceled() != 1 {
		t.Errorf("the backend's context ended %d times, want once", g.canceled())
	}
	_, _, end, _ := ev.text()
	if end == nil || !errors.Is(end.Err, chat.ErrStopped) || !end.Streamed {
		t.Fatalf("end = %+v, want ErrStopped after a chunk", end)
	}
	wantMessages(t, n.Store, convID, "user: long story", "agent: Once upon", "error: "+chat.ErrStopped.Message)
}

// TestLiveHold: a turn held for a key outside Live (the API's synchronous
// turns) counts against the same bounds as Live's own, and its release
// gives the place back once.
func TestLiveHold(t *testing.T) {
	_, lv, g, id := newLive(t)
	lv.MaxPerOwner, lv.MaxTotal = 2, 3
	a := chat.AnonOwner("a")
	r1, err := lv.Hold(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := lv.Start(t.Context(), a, chat.Request{AgentID: id, Text: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := lv.Hold(a); !errors.Is(err, chat.ErrTooManyReplies) {
		t.Errorf("third reply of one key: %v, want ErrTooManyReplies", err)
	}
	if _, err := lv.Hold(chat.AnonOwner("b")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lv.Start(t.Context(), chat.AnonOwner("c"), chat.Request{AgentID: id, Text: "x"}, nil); !errors.Is(err, chat.ErrTooManyReplies) {
		t.Errorf("fourth reply in all: %v, want ErrTooManyReplies", err)
	}
	r1()
	r1() // a second release is a no-op
	r3, err := lv.Hold(a)
	if err != nil {
		t.Fatalf("a hold after a release: %v", err)
	}
	if _, err := lv.Hold(a); !errors.Is(err, chat.ErrTooManyReplies) {
		t.Errorf("a double release gave two places back: %v", err)
	}
	r3()
	g.finish <- "done"
	waitfor.Until(t, 10*time.Second, "the turn to end", func() bool { return lv.Len() == 0 })
}

// TestLiveBounds: one reply at a time per conversation, at most
// MaxPerOwner per owner and MaxTotal in all, MaxDuration each; refusals
// store nothing.
func TestLiveBounds(t *testing.T) {
	n, lv, g, id := newLive(t)
	lv.MaxPerOwner, lv.MaxTotal = 2, 3
	a, b := chat.AnonOwner("a"), chat.AnonOwner("b")
	start := func(owner chat.Owner, conv string) (*chat.LiveTurn, error) {
		turn, _, err := lv.Start(t.Context(), owner, chat.Request{AgentID: id, ConversationID: conv, Text: "x"}, nil)
		return turn, err
	}
	t1, err := start(a, "")
	if err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 10*time.Second, "the first turn's conversation", func() bool { return t1.ConversationID() != "" })
	if _, err := start(a, t1.ConversationID()); !errors.Is(err, chat.ErrReplyPending) {
		t.Errorf("second turn in one conversation: %v, want ErrReplyPending", err)
	}
	if _, err := start(a, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := start(a, ""); !errors.Is(err, chat.ErrTooManyReplies) {
		t.Errorf("third turn of one owner: %v, want ErrTooManyReplies", err)
	}
	if _, err := start(b, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := start(chat.AnonOwner("c"), ""); !errors.Is(err, chat.ErrTooManyReplies) {
		t.Errorf("fourth turn in all: %v, want ErrTooManyReplies", err)
	}
	if lv.Len() != 3 {
		t.Errorf("Len = %d, want 3", lv.Len())
	}
	for range 3 {
		g.finish <- "done"
	}
	waitfor.Until(t, 10*time.Second, "every turn to end", func() bool { return lv.Len() == 0 })
	if _, err := start(a, t1.ConversationID()); err != nil {
		t.Errorf("a turn after the last ended: %v", err)
	}
	g.finish <- "done"
	waitfor.Until(t, 10*time.Second, "the turn to end", func() bool { return lv.Len() == 0 })

	// MaxDuration ends a turn that runs too long, stored as timed out.
	lv.MaxDuration = time.Millisecond
	var ev events
	turn, _, err := lv.Start(t.Context(), a, chat.Request{AgentID: id, Text: "slow"}, ev.sub)
	if err != nil {
		t.Fatal(err)
	}
	<-turn.Done()
	if _, _, end, _ := ev.text(); end == nil || end.Err == nil {
		t.Errorf("a turn over MaxDuration ended with %+v", end)
	}
	if lv.Len() != 0 {
		t.Errorf("%d turns kept after a timeout", lv.Len())
	}
	_ = n
}

// TestLiveEndsWithLifetime: when the server's lifetime ends, every turn
// ends, and no goroutine of Live stays behind.
func TestLiveEndsWithLifetime(t *testing.T) {
	_, lv, g, id := newLive(t)
	lifetime, end := context.WithCancel(context.Background())
	lv.Lifetime = lifetime
	baseline := runtime.NumGoroutine()
	var turns []*chat.LiveTurn
	var ends events
	for i := range 20 {
		turn, unsub, err := lv.Start(t.Context(), chat.AnonOwner(string(rune('a'+i))), chat.Request{AgentID: id, Text: "x"}, ends.sub)
		if err != nil {
			t.Fatal(err)
		}
		defer unsub()
		turns = append(turns, turn)
	}
	end()
	for _, turn := range turns {
		<-turn.Done()
	}
	failed := 0
	for _, ev := range ends.all {
		if ev.End != nil && ev.End.Err != nil {
			failed++
		}
	}
	if failed != 20 || lv.Len() != 0 {
		t.Errorf("%d turns ended with an error, %d kept; want 20 and 0", failed, lv.Len())
	}
	_ = g
	waitfor.Until(t, 10*time.Second, "the turns' goroutines to end", func() bool { return runtime.NumGoroutine() <= baseline+2 })
}
