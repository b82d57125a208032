package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// newTestRuntime serves b as agent "a1" (any other id is unknown) with
// private addresses allowed, since test servers listen on 127.0.0.1.
func newTestRuntime(t *testing.T, b agent.Backend, opts RuntimeOptions) *Runtime {
	t.Helper()
	opts.AllowPrivate = true
	rt := NewRuntime(func(_ context.Context, id string) (agent.Backend, error) {
		if id != "a1" {
			return agent.Backend{}, fmt.Errorf("store: agent %s: %w", id, agent.ErrUnknownAgent)
		}
		return b, nil
	}, opts)
	t.Cleanup(func() { rt.Close() })
	return rt
}

// collect returns an emit that records chunks.
func collect() (*[]string, func(string) error) {
	var chunks []string
	return &chunks, func(s string) error { chunks = append(chunks, s); return nil }
}

func TestEchoStreamsWordByWord(t *testing.T) {
	rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, RuntimeOptions{})
	text := "hello  big world "
	chunks, emit := collect()
	reply, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: text}, emit)
	if err != nil {
		t.Fatal(err)
	}
	if reply != text || strings.Join(*chunks, "") != text {
		t.Fatalf("reply %q, chunks %q; want exactly %q", reply, *chunks, text)
	}
	if want := []string{"hello ", " ", "big ", "world "}; !reflect.DeepEqual(*chunks, want) {
		t.Fatalf("chunks %q, want %q", *chunks, want)
	}
}

func TestCalculatorAgent(t *testing.T) {
	rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "calculator"}, RuntimeOptions{})
	chunks, emit := collect()
	reply, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "1 / 0"}, emit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "cannot divide by zero") || len(*chunks) != 1 {
		t.Fatalf("reply %q, chunks %q", reply, *chunks)
	}
}

func TestUnknownAgentsAndBackends(t *testing.T) {
	for name, tc := range map[string]struct {
		b  agent.Backend
		id string
	}{
		"unknown id":      {agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, "nope"},
		"unknown builtin": {agent.Backend{Kind: agent.BackendBuiltin, Builtin: "oracle"}, "a1"},
		"unknown kind":    {agent.Backend{Kind: "carrier-pigeon"}, "a1"},
	} {
		t.Run(name, func(t *testing.T) {
			rt := newTestRuntime(t, tc.b, RuntimeOptions{})
			if _, err := rt.Answer(context.Background(), agent.Turn{AgentID: tc.id, Text: "hi"}, nil); !errors.Is(err, agent.ErrUnknownAgent) {
				t.Fatalf("got %v, want ErrUnknownAgent", err)
			}
		})
	}
}

func TestLookupFailureIsNotUnknownAgent(t *testing.T) {
	boom := errors.New("database on fire")
	rt := NewRuntime(func(context.Context, string) (agent.Backend, error) { return agent.Backend{}, boom }, RuntimeOptions{})
	defer rt.Close()
	_, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "hi"}, nil)
	if !errors.Is(err, boom) || errors.Is(err, agent.ErrUnknownAgent) {
		t.Fatalf("got %v", err)
	}
}

func TestEmitErrorIsReturnedAsIs(t *testing.T) {
	rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, RuntimeOptions{})
	gone := errors.New("websocket closed")
	n := 0
	reply, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "one two three"}, func(string) error {
		if n++; n == 2 {
			return gone
		}
		return nil
	})
	if !errors.Is(err, gone) {
		t.Fatalf("got %v, want the emit error", err)
	}
	for _, kind := range []error{agent.ErrBackendUnavailable, agent.ErrBackendRejected, agent.ErrBadBackendReply, agent.ErrBackendTimeout} {
		if errors.Is(err, kind) {
			t.Fatalf("emit error classified as %v", kind)
		}
	}
	if reply != "one two " {
		t.Fatalf("partial reply %q", reply)
	}
}

func TestCanceledTurn(t *testing.T) {
	rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, RuntimeOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rt.Answer(ctx, agent.Turn{AgentID: "a1", Text: "hi there"}, nil)
	if !errors.Is(err, context.Canceled) || errors.Is(err, agent.ErrBackendTimeout) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// TestHaiku: the poem is about the whole message, in three lines ("the
// sea" once became "the in the dusk": only one word was kept).
func TestHaiku(t *testing.T) {
	for in, first := range map[string]string{
		"the sea":                   "the sea in the dusk —",
		"The Sea?":                  "the sea in the dusk —",
		"a poem about 42, please":   "a poem about 42, please in the dusk —",
		"42":                        "42 in the dusk —",
		"?!":                        "silence in the dusk —",
		strings.Repeat("wave ", 30): strings.TrimSpace(strings.Repeat("wave ", 12)) + "… in the dusk —",
	} {
		reply, chunks, err := answer(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "haiku"}, RuntimeOptions{}, agent.Turn{Text: in})
		lines := strings.Split(reply, "\n")
		if err != nil || len(chunks) != 3 || len(lines) != 3 || lines[0] != first {
			t.Errorf("haiku of %q = %q in %d chunks (%v), want first line %q", in, reply, len(chunks), err, first)
		}
	}
}

// TestEchoDelay: with EchoDelay the echo streams the same words, one chunk
// each, and a canceled turn ends at the next pause with what streamed.
func TestEchoDelay(t *testing.T) {
	opts := RuntimeOptions{EchoDelay: time.Millisecond}
	reply, chunks, err := answer(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, opts, agent.Turn{Text: "one two three"})
	if err != nil || reply != "one two three" || len(chunks) != 3 {
		t.Fatalf("slow echo = %q in %d chunks (%v)", reply, len(chunks), err)
	}
	rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, RuntimeOptions{EchoDelay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rt.Answer(ctx, agent.Turn{AgentID: "a1", Text: "never streamed"}, func(string) error { return nil })
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled slow echo: %v, want context.Canceled", err)
	}
}

// TestHistoryOmitted: a builtin that answers the message alone says so
// (OnHistoryUnread) and answers a turn without its history; a backend
// that reads the history refuses such a turn, answering nothing, and
// says nothing of the kind.
func TestHistoryOmitted(t *testing.T) {
	for _, tc := range []struct {
		b     agent.Backend
		reads bool
	}{
		{agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}, false},
		{agent.Backend{Kind: agent.BackendBuiltin, Builtin: "haiku"}, false},
		{agent.Backend{Kind: agent.BackendLLM, URL: "http://127.0.0.1:1/v1", Model: "m"}, true},
		{agent.Backend{Kind: agent.BackendWebhook, URL: "http://127.0.0.1:1/hook"}, true},
	} {
		rt := newTestRuntime(t, tc.b, RuntimeOptions{})
		said := false
		_, emit := collect()
		_, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a1", Text: "hi", HistoryOmitted: true,
			OnHistoryUnread: func() { said = true }}, emit)
		switch {
		case tc.reads && !errors.Is(err, agent.ErrHistoryRequired):
			t.Errorf("%s %s: a turn without its history = %v, want %v", tc.b.Kind, tc.b.Builtin, err, agent.ErrHistoryRequired)
		case !tc.reads && err != nil:
			t.Errorf("%s %s: a turn without its history = %v", tc.b.Kind, tc.b.Builtin, err)
		}
		if said == tc.reads {
			t.Errorf("%s %s: said it does not read the history = %v", tc.b.Kind, tc.b.Builtin, said)
		}
	}
}
