package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers"
	srv "github.com/agentsite/agentsite/handlers/a2a"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// fakeAgent answers every local agent's turns, by the message text:
// "fail" fails, "block" streams a little then waits for its context to
// end, "history" tells how many earlier messages it was sent, "slow:<d>"
// answers after d, "ask:<prompt>" streams "let me see" and then asks for
// input (agent.NeedsInput), "tool:<name>" calls that tool (a step, as it
// starts and ends) and answers "used <name>", anything else is echoed
// word by word.
type fakeAgent struct {
	blocked chan struct{} // a "block" turn is running
	ended   chan error    // a "block" turn's context ended, with this error
}

func (f *fakeAgent) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	switch {
	case t.Text == "fail":
		return "", agent.ErrBackendUnavailable
	case t.Text == "block":
		_ = emit("working on it")
		f.blocked <- struct{}{}
		<-ctx.Done()
		f.ended <- ctx.Err()
		return "working on it", ctx.Err()
	case strings.HasPrefix(t.Text, "ask:"):
		if err := emit("let me see"); err != nil {
			return "", err
		}
		return "let me see", agent.NeedsInput(strings.TrimPrefix(t.Text, "ask:"))
	case strings.HasPrefix(t.Text, "tool:"):
		name := strings.TrimPrefix(t.Text, "tool:")
		st := agent.Step{Tool: "call_tool", Name: name, Server: "tools.example/mcp", Text: `{"city":"Paris"}`}
		if t.OnStep != nil {
			t.OnStep(st)
			st.Done, st.Reply, st.DurationMS = true, "sunny", 12
			t.OnStep(st)
		}
		reply := "used " + name
		return reply, emit(reply)
	case t.Text == "history":
		reply := fmt.Sprintf("%d earlier messages", len(t.History))
		return reply, emit(reply)
	case strings.HasPrefix(t.Text, "slow:"):
		d, err := time.ParseDuration(strings.TrimPrefix(t.Text, "slow:"))
		if err != nil {
			return "", err
		}
		select { // an agent that takes its time, not a wait for an outcome
		case <-time.After(d):
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "done", nil
	}
	var out strings.Builder
	for _, w := range strings.SplitAfter(t.Text, " ") {
		out.WriteString(w)
		if err := emit(w); err != nil {
			return out.String(), err
		}
	}
	return out.String(), nil
}

// newEnv starts a portal whose local agents are a fakeAgent, changing
// the configuration with edit (may be nil).
func newEnv(t *testing.T, edit func(*handlers.Config)) (*Env, *fakeAgent) {
	t.Helper()
	e := NewConfig(t, OpenSQLite(t), edit)
	return e, installFake(e)
}

// installFake makes a fakeAgent answer env's local agents.
func installFake(e *Env) *fakeAgent {
	f := &fakeAgent{blocked: make(chan struct{}, 4), ended: make(chan error, 4)}
	e.Server.Chat.Local = f
	return f
}

// message is a user message with text, continuing contextID if set.
func message(text, contextID string) *a2a.Message {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
	m.ContextID = contextID
	return m
}

func send(m *a2a.Message) a2a.MessageSendParams { return a2a.MessageSendParams{Message: m} }

// post sends one JSON-RPC request (params may be raw JSON as a string).
func post(e *Env, path, method string, params any) *http.Response {
	e.T.Helper()
	p, ok := params.(string)
	if !ok {
		b, err := json.Marshal(params)
		if err != nil {
			e.T.Fatal(err)
		}
		p = string(b)
	}
	return e.Do(http.MethodPost, path, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":%q,"params":%s}`, method, p))
}

// call sends one JSON-RPC request and decodes its response (status 200).
func call(e *Env, path, method string, params any) srv.Response {
	e.T.Helper()
	resp := post(e, path, method, params)
	WantStatus(e.T, resp, http.StatusOK)
	r := Decode[srv.Response](e.T, resp)
	if string(r.ID) != "7" || r.JSONRPC != "2.0" {
		e.T.Fatalf("response envelope = %+v", r)
	}
	return r
}

// resultOf decodes a successful response's result.
func resultOf[T any](t *testing.T, r srv.Response) T {
	t.Helper()
	var v T
	if r.Error != nil {
		t.Fatalf("JSON-RPC error %d: %s (%+v)", r.Error.Code, r.Error.Message, r.Error.Data)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r.Result, err)
	}
	return v
}

// wantError checks a response is JSON-RPC error code (and data.code, if
// dataCode is not empty).
func wantError(t *testing.T, r srv.Response, code int, dataCode string) {
	t.Helper()
	switch {
	case r.Error == nil:
		t.Fatalf("result %s, want error %d", r.Result, code)
	case r.Error.Code != code:
		t.Fatalf("error %d %q, want %d", r.Error.Code, r.Error.Message, code)
	case dataCode != "" && (r.Error.Data == nil || r.Error.Data.Code != dataCode):
		t.Fatalf("error data = %+v, want code %q", r.Error.Data, dataCode)
	case r.Error.Message == "":
		t.Fatal("error without a message")
	}
}

// streamEvents sends message/stream and reads every SSE event to the end.
func streamEvents(e *Env, path string, params any) []srv.Response {
	e.T.Helper()
	resp := post(e, path, "message/stream", params)
	WantStatus(e.T, resp, http.StatusOK)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		e.T.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var out []srv.Response
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r srv.Response
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			e.T.Fatalf("event %q: %v", data, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		e.T.Fatal(err)
	}
	return out
}

// kind is an event's "kind" discriminator.
func kind(t *testing.T, r srv.Response) string {
	t.Helper()
	return resultOf[struct {
		Kind string `json:"kind"`
	}](t, r).Kind
}

// text joins the text parts of parts.
func text(parts a2a.ContentParts) string {
	var b strings.Builder
	for _, p := range parts {
		if tp, ok := p.(a2a.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

// finalStatus is the last event of a stream: the task's final status.
func finalStatus(t *testing.T, events []srv.Response) a2a.TaskStatusUpdateEvent {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	last := resultOf[a2a.TaskStatusUpdateEvent](t, events[len(events)-1])
	if !last.Final {
		t.Errorf("last event %+v is not final", last)
	}
	return last
}
