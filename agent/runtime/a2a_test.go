package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"

	"github.com/agentsite/agentsite/agent"
)

// echoAgent is an A2A agent (an a2asrv.AgentExecutor) that answers
// "turn N: <text>", N counting the turns of the message's context, in three
// artifact chunks. Some texts ask for other behaviour: "fail", "slow",
// "ask" (input-required), "message" (a plain Message, no task).
type echoAgent struct {
	mu     sync.Mutex
	turns  map[string]int // contextId → turns seen
	strict bool           // refuse a contextId it does not know, like a server that restarted
	stop   chan struct{}  // closed when the test ends, which "slow" waits for too
}

func (a *echoAgent) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	text := partsText(rc.Message.Parts)
	a.mu.Lock()
	_, known := a.turns[rc.ContextID]
	if a.strict && !known && rc.Message.ContextID != "" {
		a.mu.Unlock()
		return fmt.Errorf("context %s is unknown: %w", rc.ContextID, a2a.ErrInvalidParams)
	}
	a.turns[rc.ContextID]++
	n := a.turns[rc.ContextID]
	a.mu.Unlock()

	if text == "message" {
		m := a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "just a message"})
		m.ContextID = rc.ContextID
		return q.Write(ctx, m)
	}
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	// Working before any artifact: a2asrv v0.3.3 keeps the Task event it
	// was given as its task and appends artifacts to it while the stream
	// still encodes it (a data race, and a snapshot ahead of the stream);
	// a status update makes it work on a copy.
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}
	status := func(state a2a.TaskState, say string) error {
		var m *a2a.Message
		if say != "" {
			m = a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, a2a.TextPart{Text: say})
		}
		ev := a2a.NewStatusUpdateEvent(rc, state, m)
		ev.Final = true
		return q.Write(ctx, ev)
	}
	switch text {
	case "fail":
		return status(a2a.TaskStateFailed, "the calculator exploded")
	case "slow":
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.stop:
			return errors.New("the test ended")
		}
	case "ask":
		return status(a2a.TaskStateInputRequired, "which city?")
	}
	reply := fmt.Sprintf("turn %d: %s", n, text)
	if rc.StoredTask != nil {
		reply = "continued the task with " + text
	}
	third := len(reply) / 3
	first := a2a.NewArtifactEvent(rc, a2a.TextPart{Text: reply[:third]})
	if err := q.Write(ctx, first); err != nil {
		return err
	}
	for _, chunk := range []string{reply[third : 2*third], reply[2*third:]} {
		if err := q.Write(ctx, a2a.NewArtifactUpdateEvent(rc, first.Artifact.ID, a2a.TextPart{Text: chunk})); err != nil {
			return err
		}
	}
	return status(a2a.TaskStateCompleted, "")
}

func (a *echoAgent) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil))
}

// a2aServer is an echoAgent served over JSON-RPC on httptest, its card at
// /card.json; it counts card fetches and records the methods called.
type a2aServer struct {
	*httptest.Server
	agent    *echoAgent
	cardHits atomic.Int64
	mu       sync.Mutex
	methods  []string
}

func startA2AServer(t *testing.T, streaming bool) *a2aServer {
	t.Helper()
	s := &a2aServer{agent: &echoAgent{turns: map[string]int{}, stop: make(chan struct{})}}
	mux := http.NewServeMux()
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.agent.stop) }) // runs first
	card := a2aTestCard(s.URL+"/rpc", streaming)
	cardHandler := a2asrv.NewStaticAgentCardHandler(card)
	mux.HandleFunc("/card.json", func(w http.ResponseWriter, r *http.Request) {
		s.cardHits.Add(1)
		cardHandler.ServeHTTP(w, r)
	})
	rpc := a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(s.agent))
	mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct{ Method string }
		_ = json.Unmarshal(body, &req)
		s.mu.Lock()
		s.methods = append(s.methods, req.Method)
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		rpc.ServeHTTP(w, r)
	})
	return s
}

func a2aTestCard(rpcURL string, streaming bool) *a2a.AgentCard {
	return &a2a.AgentCard{
		Name: "Echo", Description: "echoes", URL: rpcURL, PreferredTransport: a2a.TransportProtocolJSONRPC,
		ProtocolVersion: "0.3.0", Version: "1", Capabilities: a2a.AgentCapabilities{Streaming: streaming},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}},
	}
}

func (s *a2aServer) backend() agent.Backend {
	return agent.Backend{Kind: agent.BackendA2A, URL: s.URL + "/card.json"}
}

func (s *a2aServer) calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods...)
}

// a2aTestTurn is a turn of conversation conv to agent a1.
func a2aTestTurn(conv, text string) agent.Turn {
	return agent.Turn{AgentID: "a1", ConversationID: conv, Text: text}
}

func TestA2AStreamsAndContinuesTheContext(t *testing.T) {
	srv := startA2AServer(t, true)
	rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
	ctx := context.Background()

	chunks, emit := collect()
	reply, err := rt.Answer(ctx, a2aTestTurn("c1", "hello there"), emit)
	if err != nil {
		t.Fatal(err)
	}
	if reply != "turn 1: hello there" || strings.Join(*chunks, "") != reply || len(*chunks) != 3 {
		t.Fatalf("reply %q, chunks %q; want the reply in the server's 3 chunks", reply, *chunks)
	}
	reply, err = rt.Answer(ctx, a2aTestTurn("c1", "again"), nil)
	if err != nil || reply != "turn 2: again" {
		t.Fatalf("second turn: %q, %v; want it in the same remote context", reply, err)
	}
	reply, err = rt.Answer(ctx, a2aTestTurn("c2", "other"), nil)
	if err != nil || reply != "turn 1: other" {
		t.Fatalf("another conversation: %q, %v; want a fresh remote context", reply, err)
	}
	for _, m := range srv.calls() {
		if m != a2aMethodStream {
			t.Fatalf("calls %v; a streaming card gets message/stream", srv.calls())
		}
	}
	if n := srv.cardHits.Load(); n != 1 {
		t.Fatalf("card fetched %d times; want once, then cached", n)
	}
}

func TestA2ANonStreaming(t *testing.T) {
	srv := startA2AServer(t, false)
	rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
	chunks, emit := collect()
	reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hello there"), emit)
	if err != nil || reply != "turn 1: hello there" || strings.Join(*chunks, "") != reply {
		t.Fatalf("reply %q, chunks %q, err %v", reply, *chunks, err)
	}
	reply, err = rt.Answer(context.Background(), a2aTestTurn("c1", "again"), nil)
	if err != nil || reply != "turn 2: again" {
		t.Fatalf("second turn: %q, %v", reply, err)
	}
	if calls := srv.calls(); len(calls) != 2 || calls[0] != a2aMethodSend || calls[1] != a2aMethodSend {
		t.Fatalf("calls %v; a card without streaming gets message/send", calls)
	}
}

func TestA2APlainMessageReply(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		srv := startA2AServer(t, streaming)
		rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
		reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "message"), nil)
		if err != nil || reply != "just a message" {
			t.Fatalf("streaming %v: %q, %v", streaming, reply, err)
		}
	}
}

// TestA2AInputRequiredContinuesTheTask: an agent that asks back keeps its
// task open; the next turn answers in that task.
func TestA2AInputRequiredContinuesTheTask(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		srv := startA2AServer(t, streaming)
		rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
		reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "ask"), nil)
		if err != nil || reply != "which city?" {
			t.Fatalf("streaming %v: %q, %v", streaming, reply, err)
		}
		reply, err = rt.Answer(context.Background(), a2aTestTurn("c1", "Paris"), nil)
		if err != nil || reply != "continued the task with Paris" {
			t.Fatalf("streaming %v, answer: %q, %v", streaming, reply, err)
		}
		reply, err = rt.Answer(context.Background(), a2aTestTurn("c1", "next"), nil)
		if err != nil || reply != "turn 3: next" {
			t.Fatalf("streaming %v, after the task: %q, %v; want a new task in the context", streaming, reply, err)
		}
	}
}

// TestA2AForgottenContextStartsFresh: an agent that no longer knows the
// conversation's context refuses it; the turn is sent again without it.
func TestA2AForgottenContextStartsFresh(t *testing.T) {
	srv := startA2AServer(t, true)
	srv.agent.strict = true
	rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
	if _, err := rt.Answer(context.Background(), a2aTestTurn("c1", "one"), nil); err != nil {
		t.Fatal(err)
	}
	srv.agent.mu.Lock()
	clear(srv.agent.turns) // the agent restarted
	srv.agent.mu.Unlock()
	reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "two"), nil)
	if err != nil || reply != "turn 1: two" {
		t.Fatalf("%q, %v; want the turn in a fresh context", reply, err)
	}
	reply, err = rt.Answer(context.Background(), a2aTestTurn("c1", "three"), nil)
	if err != nil || reply != "turn 2: three" {
		t.Fatalf("%q, %v; want the new context kept", reply, err)
	}
}

func TestA2ATaskFails(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		srv := startA2AServer(t, streaming)
		rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
		_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "fail"), nil)
		if !errors.Is(err, agent.ErrBackendRejected) || PublicMessage(err) != "the calculator exploded" {
			t.Fatalf("streaming %v: %v (public %q); want ErrBackendRejected with the task's status message", streaming, err, PublicMessage(err))
		}
	}
}

func TestA2ATimeout(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		srv := startA2AServer(t, streaming)
		rt := newTestRuntime(t, srv.backend(), RuntimeOptions{Timeout: 500 * time.Millisecond})
		_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "slow"), nil)
		if !errors.Is(err, agent.ErrBackendTimeout) {
			t.Fatalf("streaming %v: %v, want ErrBackendTimeout", streaming, err)
		}
	}
}

func TestA2AReplyTooLarge(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		srv := startA2AServer(t, streaming)
		rt := newTestRuntime(t, srv.backend(), RuntimeOptions{MaxReplyBytes: 12})
		_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "a long message"), nil)
		if !errors.Is(err, agent.ErrReplyTooLarge) {
			t.Fatalf("streaming %v: %v, want ErrReplyTooLarge", streaming, err)
		}
	}
}

func TestA2ACardIsRefreshed(t *testing.T) {
	srv := startA2AServer(t, true)
	rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
	now := time.Now()
	rt.a2a.now = func() time.Time { return now }
	for i := range 3 {
		if _, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			now = now.Add(a2aCardTTL + time.Second)
		}
	}
	if n := srv.cardHits.Load(); n != 2 {
		t.Fatalf("card fetched %d times; want once, and again after %s", n, a2aCardTTL)
	}
}

func TestProbeA2A(t *testing.T) {
	srv := startA2AServer(t, true)
	rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
	card, err := rt.ProbeA2A(context.Background(), srv.URL+"/card.json")
	if err != nil || card.Name != "Echo" || !card.Capabilities.Streaming {
		t.Fatalf("ProbeA2A = %+v, %v", card, err)
	}
}

// TestA2APollsAnUnfinishedTask: an agent that answers message/send with a
// working task, or ends its stream before the task ends, is asked with
// tasks/get until the task is done.
func TestA2APollsAnUnfinishedTask(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		var gets atomic.Int64
		task := func(state a2a.TaskState) *a2a.Task {
			tk := &a2a.Task{ID: "task-1", ContextID: "ctx-1", Status: a2a.TaskStatus{State: state}}
			if state == a2a.TaskStateCompleted {
				tk.Artifacts = []*a2a.Artifact{{ID: "art-1", Parts: a2a.ContentParts{a2a.TextPart{Text: "polled answer"}}}}
			}
			return tk
		}
		mux := http.NewServeMux()
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		mux.Handle("/card.json", a2asrv.NewStaticAgentCardHandler(a2aTestCard(srv.URL+"/rpc", streaming)))
		mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				ID     string
				Method string
			}
			_ = json.NewDecoder(r.Body).Decode(&req)
			result := task(a2a.TaskStateWorking)
			if req.Method == a2aMethodGet && gets.Add(1) > 1 {
				result = task(a2a.TaskStateCompleted)
			}
			body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
			if req.Method == a2aMethodStream {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprintf(w, "data: %s\n\n", body)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		})
		rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/card.json"}, RuntimeOptions{})
		reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
		if err != nil || reply != "polled answer" || gets.Load() != 2 {
			t.Fatalf("streaming %v: %q, %v after %d tasks/get; want the answer on the second", streaming, reply, err, gets.Load())
		}
	}
}
