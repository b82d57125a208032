package api_test

import (
	"net/http"
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
