package api_test

import (
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestOwnerSeesWhyATurnFailed: when an agent's backend fails, its owner
// (and the operator) read what the backend said and what to do; another
// account and an anonymous caller read only that the agent could not
// answer. The real runtime, against a port that refuses connections.
func TestOwnerSeesWhyATurnFailed(t *testing.T) {
	e := NewChat(t)
	e.AllowPrivateEndpoints()
	alice, bob := e.UserToken("alice"), e.UserToken("bob")
	dead, hostPort := RefusingURL(t, "/v1")
	in := WeatherInput("dead-model")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: dead, Model: "m"}
	id := e.SeedAgent("alice", in).Record.ID

	say := func(headers ...string) string {
		t.Helper()
		resp := e.Do("POST", "/api/v1/agents/"+id+"/messages", apiwire.MessageIn{Text: "hello"}, headers...)
		if resp.StatusCode < 400 {
			t.Fatalf("a turn to a dead backend answered %d", resp.StatusCode)
		}
		return Decode[apiwire.ErrorBody](t, resp).Error.Message
	}
	for who, msg := range map[string]string{"the owner": say(Bearer(alice)...), "the operator": say(Bearer(OperatorToken)...)} {
		if !strings.Contains(msg, "You own this agent") || !strings.Contains(msg, hostPort) || !strings.Contains(msg, "Test backend") {
			t.Errorf("%s reads %q: want what the backend said (%s) and what to do", who, msg, hostPort)
		}
	}
	for who, msg := range map[string]string{"another account": say(Bearer(bob)...), "an anonymous caller": say()} {
		if strings.Contains(msg, "You own") || strings.Contains(msg, hostPort) || !strings.Contains(msg, "could not answer") {
			t.Errorf("%s reads %q: want only that the agent could not answer", who, msg)
		}
	}
}

// TestAPIRegistrationTestsTheBackend: creating or updating an agent
// through the API probes its backend once, as the form's Test backend
// does, and says what failed without refusing the agent; a builtin has
// nothing to probe.
func TestAPIRegistrationTestsTheBackend(t *testing.T) {
	e := New(t)
	UseHealth(e)
	e.AllowPrivateEndpoints()
	token := Bearer(e.UserToken("alice"))
	dead, hostPort := RefusingURL(t, "/v1")
	in := apiwire.AgentInput{Name: "dead-model", DisplayName: "Dead Model", Description: "Its model is down."}
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: dead, Model: "m"}
	resp := e.Do("POST", "/api/v1/agents", in, token...)
	WantStatus(t, resp, 201)
	got := Decode[apiwire.Agent](t, resp)
	if got.BackendTest == nil || got.BackendTest.OK || !strings.Contains(got.BackendTest.Message, "connection refused at "+hostPort) {
		t.Fatalf("backend_test = %+v, want the refused connection at %s", got.BackendTest, hostPort)
	}
	// Saved all the same, and an update says it again.
	in.Description = "Still down."
	resp = e.Do("PUT", "/api/v1/agents/"+got.ID, in, token...)
	WantStatus(t, resp, 200)
	if up := Decode[apiwire.Agent](t, resp); up.BackendTest == nil || up.BackendTest.OK {
		t.Errorf("update: backend_test = %+v", up.BackendTest)
	}
	echo := apiwire.AgentInput{Name: "echo-two", DisplayName: "Echo", Description: "Echoes."}
	echo.Backend = agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"}
	resp = e.Do("POST", "/api/v1/agents", echo, token...)
	WantStatus(t, resp, 201)
	if b := Decode[apiwire.Agent](t, resp).BackendTest; b != nil {
		t.Errorf("a builtin got backend_test %+v", b)
	}
}
