package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// gatedModel is a fake model that holds every request until released and
// counts the requests it is answering at once.
type gatedModel struct {
	gate chan struct{}

	mu      sync.Mutex
	now     int
	most    int
	started int
}

func newGatedModel() *gatedModel { return &gatedModel{gate: make(chan struct{})} }

func (g *gatedModel) script(req fakellm.Request) fakellm.Reply {
	g.mu.Lock()
	g.now++
	g.started++
	g.most = max(g.most, g.now)
	g.mu.Unlock()
	<-g.gate
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
	return fakellm.Reply{Text: "re: " + req.LastUser()}
}

func (g *gatedModel) counts() (now, most, started int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.now, g.most, g.started
}

// scheduledRuntime is a runtime whose llm agents (any id) all use one
// fake model, scheduled by s.
func scheduledRuntime(t *testing.T, script fakellm.Script, s *modelsched.Scheduler, tune func(*agent.Backend)) (*runtime.Runtime, string) {
	t.Helper()
	srv := httptest.NewServer(&fakellm.Server{Model: "demo", Script: script})
	t.Cleanup(srv.Close)
	b := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo"}
	if tune != nil {
		tune(&b)
	}
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil },
		runtime.RuntimeOptions{AllowPrivate: true, Timeout: time.Minute, Models: s})
	t.Cleanup(func() { _ = rt.Close() })
	return rt, "http://" + srv.Listener.Addr().String() + "/v1/chat/completions"
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestModelLimitHoldsThroughTheRuntime: six turns of six callers at a model
// limited to two: the model never answers more than two at once, the rest
// wait in the scheduler, and all six are answered.
func TestModelLimitHoldsThroughTheRuntime(t *testing.T) {
	model := newGatedModel()
	s := mustNew(t, modelsched.Options{Limit: 2, MaxQueue: 16})
	rt, endpoint := scheduledRuntime(t, model.script, s, nil)
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			ctx := agent.WithCaller(t.Context(), fmt.Sprintf("user:%d", i))
			reply, err := rt.Answer(ctx, agent.Turn{AgentID: idSelf, Text: fmt.Sprint("hello ", i)}, nil)
			if err == nil && reply != fmt.Sprint("re: hello ", i) {
				err = fmt.Errorf("reply %q", reply)
			}
			errs <- err
		}()
	}
	poll(t, "two at the model and four waiting", func() bool {
		in, waiting := s.Load(endpoint)
		now, _, _ := model.counts()
		return in == 2 && waiting == 4 && now == 2
	})
	close(model.gate)
	for range 6 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, most, started := model.counts(); most != 2 || started != 6 {
		t.Fatalf("the model answered %d at most at once (want 2) and %d in all (want 6)", most, started)
	}
}

// TestModelBusyAndStopThroughTheRuntime: past the queue's bound a turn is
// refused with the rate-limited model_busy error that says how many wait;
// a waiting turn hears its place, and one stopped while it waits leaves
// the queue without ever reaching the model.
func TestModelBusyAndStopThroughTheRuntime(t *testing.T) {
	model := newGatedModel()
	s := mustNew(t, modelsched.Options{Limit: 1, MaxQueue: 1})
	rt, endpoint := scheduledRuntime(t, model.script, s, nil)
	first := make(chan error, 1)
	go func() {
		_, err := rt.Answer(agent.WithCaller(t.Context(), "a"), agent.Turn{AgentID: idSelf, Text: "one"}, nil)
		first <- err
	}()
	poll(t, "the first turn at the model", func() bool { now, _, _ := model.counts(); return now == 1 })

	ctx, stop := context.WithCancel(agent.WithCaller(t.Context(), "b"))
	var mu sync.Mutex
	var heard []int
	second := make(chan error, 1)
	go func() {
		_, err := rt.Answer(ctx, agent.Turn{AgentID: idSelf, Text: "two",
			OnWait: func(n int) { mu.Lock(); heard = append(heard, n); mu.Unlock() }}, nil)
		second <- err
	}()
	poll(t, "the second turn to wait", func() bool { _, w := s.Load(endpoint); return w == 1 })

	_, err := rt.Answer(agent.WithCaller(t.Context(), "c"), agent.Turn{AgentID: idSelf, Text: "three"}, nil)
	e := agent.AsError(err)
	if !errors.Is(err, agent.ErrModelBusy) || e == nil || e.Kind != agent.KindRateLimited {
		t.Fatalf("over the queue's bound: %v, want agent.ErrModelBusy (rate limited)", err)
	}
	if got := runtime.PublicMessage(err); got != "busy: 1 waiting; try again shortly" {
		t.Fatalf("public message %q", got)
	}

	stop() // the person pressed Stop while waiting
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped while waiting: %v, want context.Canceled", err)
	}
	if in, w := s.Load(endpoint); in != 1 || w != 0 {
		t.Fatalf("after the stop: %d in flight, %d waiting; want 1 and 0", in, w)
	}
	mu.Lock()
	if len(heard) == 0 || heard[0] != 0 {
		t.Errorf("the waiting turn heard %v, want 0 ahead first", heard)
	}
	mu.Unlock()
	close(model.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if _, _, started := model.counts(); started != 1 {
		t.Fatalf("the model saw %d requests, want 1 (the stopped and the refused turn never reached it)", started)
	}
}

// askLocal is a Delegator that answers every ask with the same runtime, as
// chat does for this node's own agents.
type askLocal struct{ rt *runtime.Runtime }

func (a askLocal) FindAgents(context.Context, string, string) ([]runtime.FoundAgent, error) {
	return nil, nil
}
func (a askLocal) AskAgent(ctx context.Context, trace agent.Trace, agentID, text string) (string, error) {
	return a.rt.Answer(ctx, agent.Turn{AgentID: agentID, Text: text, Trace: trace}, nil)
}
func (a askLocal) Describe(context.Context, string) (string, string) { return "", "" }

// TestDelegatedTurnTakesTheSameQueue: with one slot at the model, an agent
// that asks another agent of the same model gets its answer: the slot is
// held for a completion round only, not while the tools it called run,
// and the delegated turn takes its slot from the same scheduler.
func TestDelegatedTurnTakesTheSameQueue(t *testing.T) {
	var mu sync.Mutex
	var now, most int
	script := func(req fakellm.Request) fakellm.Reply {
		mu.Lock()
		now++
		most = max(most, now)
		mu.Unlock()
		defer func() { mu.Lock(); now--; mu.Unlock() }()
		switch {
		case req.LastUser() == "inner":
			return fakellm.Reply{Text: "inner answer"}
		case len(req.Tools) > 0 && len(req.ToolResults()) == 0:
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("c1", runtime.ToolAskAgent, map[string]string{"agent_id": idCalc, "text": "inner"})}}
		}
		return fakellm.Reply{Text: "outer heard: " + strings.Join(req.ToolResults(), "")}
	}
	s := mustNew(t, modelsched.Options{Limit: 1, MaxQueue: 4})
	rt, endpoint := scheduledRuntime(t, script, s, func(b *agent.Backend) { b.Delegate = true })
	rt.Delegator = askLocal{rt}
	ctx, cancel := context.WithTimeout(agent.WithCaller(t.Context(), "user:1"), 20*time.Second)
	defer cancel()
	reply, err := rt.Answer(ctx, agent.Turn{AgentID: idSelf, Text: "outer", Trace: agent.NewTrace()}, nil)
	if err != nil {
		t.Fatalf("a delegating agent with one model slot: %v", err)
	}
	if !strings.Contains(reply, "inner answer") {
		t.Fatalf("reply %q", reply)
	}
	if in, w := s.Load(endpoint); in != 0 || w != 0 || most != 1 {
		t.Fatalf("%d in flight, %d waiting, %d at the model at most; want 0, 0, 1", in, w, most)
	}
}

// mustNew is a Scheduler for a test.
func mustNew(tb testing.TB, opts modelsched.Options) *modelsched.Scheduler {
	tb.Helper()
	s, err := modelsched.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
