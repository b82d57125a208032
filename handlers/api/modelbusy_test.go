package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestAPIModelBusyIs429: a turn refused because its model's queue is full
// (the model scheduler) is 429 with code model_busy and how many wait.
func TestAPIModelBusyIs429(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo", "Echo")
	e.Server.Chat.Local = FailingAnswerer{Err: &runtime.BackendError{Kind: agent.ErrModelBusy, Backend: agent.BackendLLM,
		Public: "busy: 64 waiting; try again shortly"}}
	resp := e.Do("POST", "/api/v1/agents/"+id+"/messages", apiwire.MessageIn{Text: "hello"})
	WantStatus(t, resp, http.StatusTooManyRequests)
	body := Decode[apiwire.ErrorBody](t, resp)
	if body.Error.Code != "model_busy" || body.Error.Message != "The agent's model is busy: 64 waiting; try again shortly." {
		t.Fatalf("error %+v", body.Error)
	}
}

// callerAnswerer answers with the caller its turn waits as in a model's
// queue.
type callerAnswerer struct{}

func (callerAnswerer) Answer(ctx context.Context, _ agent.Turn, emit func(string) error) (string, error) {
	c := agent.CallerOf(ctx)
	return c, emit(c)
}

// TestAPITurnsQueueAsTheirCaller: an account's turns wait in a model's
// queue as the account; anonymous callers, who share one owner, each as
// their own visitor.
func TestAPITurnsQueueAsTheirCaller(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("echo", "Echo")
	e.Server.Chat.Local = callerAnswerer{}
	if got := send(t, e, id, apiwire.MessageIn{Text: "hi"}).Reply; !strings.HasPrefix(got, "api:anonymous@ip:") {
		t.Errorf("an anonymous turn waits as %q, want api:anonymous@ip:…", got)
	}
	if got := send(t, e, id, apiwire.MessageIn{Text: "hi"}, Bearer(e.UserToken("alice"))...).Reply; !strings.HasPrefix(got, "user:") {
		t.Errorf("an account's turn waits as %q, want user:…", got)
	}
}
