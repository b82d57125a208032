package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestAPIBatch: POST /api/v1/agents:batch registers each item as POST
// /api/v1/agents would, answers one result per item in order, and takes
// the operator token only.
func TestAPIBatch(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		existing := apiwire.AgentInput(WeatherInput("weather-bot"))
		WantStatus(t, e.Do("POST", "/api/v1/agents", existing, Bearer(OperatorToken)...), http.StatusCreated)

		bad := apiwire.AgentInput(WeatherInput("bad-bot"))
		bad.Backend = agent.Backend{Kind: "nope"}
		existing.Description = "Now updated in bulk."
		req := apiwire.BatchRequest{Items: []apiwire.AgentInput{
			apiwire.AgentInput(WeatherInput("bulk-one")), existing, bad, apiwire.AgentInput(WeatherInput("bulk-two")),
		}}
		resp := e.Do("POST", "/api/v1/agents:batch", req, Bearer(OperatorToken)...)
		WantStatus(t, resp, http.StatusOK)
		got := Decode[apiwire.BatchResponse](t, resp)
		if got.Created != 2 || got.Updated != 1 || got.Refused != 1 || len(got.Results) != 4 {
			t.Fatalf("batch = %+v", got)
		}
		for i, want := range []string{"created", "updated", "refused", "created"} {
			if r := got.Results[i]; r.Index != i || r.Outcome != want {
				t.Errorf("result %d = %+v, want %s", i, r, want)
			}
		}
		if e := got.Results[2].Error; e == nil || e.Code != string(agent.CodeInvalidInput) || e.Fields["backend.kind"] == "" {
			t.Errorf("refusal = %+v", e)
		}
		one := Decode[apiwire.Agent](t, e.Do("GET", "/api/v1/agents/"+got.Results[0].ID, nil))
		if one.Name != "bulk-one" || !one.Local {
			t.Errorf("bulk-one = %+v", one)
		}
		upd := Decode[apiwire.Agent](t, e.Do("GET", "/api/v1/agents/"+got.Results[1].ID, nil))
		if upd.Description != "Now updated in bulk." {
			t.Errorf("updated description = %q", upd.Description)
		}

		// Personal tokens and anonymous clients may not; bad bodies are 4xx.
		alice := e.UserToken("alice")
		WantStatus(t, e.Do("POST", "/api/v1/agents:batch", req, Bearer(alice)...), http.StatusForbidden)
		WantStatus(t, e.Do("POST", "/api/v1/agents:batch", req), http.StatusUnauthorized)
		WantStatus(t, e.Do("POST", "/api/v1/agents:batch", map[string]any{"itmes": 1}, Bearer(OperatorToken)...), http.StatusBadRequest)
		many := apiwire.BatchRequest{Items: make([]apiwire.AgentInput, apiwire.MaxBatchItems+1)}
		WantStatus(t, e.Do("POST", "/api/v1/agents:batch", many, Bearer(OperatorToken)...), http.StatusRequestEntityTooLarge)
	})
}

// TestOperatorWriteBudget: the operator token is not held to one client's
// write budget (six times RateLimit a minute) but to its own.
func TestOperatorWriteBudget(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.RateLimit = 2 }) // 12 writes a minute per client
	alice := e.UserToken("alice")
	limited := false
	for i := range 20 {
		if resp := e.Do("POST", "/api/v1/agents", WeatherInput(fmt.Sprintf("user-bot-%d", i)), Bearer(alice)...); resp.StatusCode == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("a personal token was never limited")
	}
	// Same client, operator token: far more writes go through.
	for i := range 40 {
		resp := e.Do("POST", "/api/v1/agents", WeatherInput(fmt.Sprintf("op-bot-%d", i)), Bearer(OperatorToken)...)
		WantStatus(t, resp, http.StatusCreated)
	}
}
