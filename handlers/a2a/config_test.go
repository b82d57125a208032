package a2a_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/a2a"
)

// TestNewTakesFinishedConfig: New refuses a Config without its bounds
// rather than filling in numbers of its own, and builds the push client
// once, from the policy it is given.
func TestNewTakesFinishedConfig(t *testing.T) {
	finished := a2a.Config{TurnTimeout: time.Minute, MaxTasks: 10, TaskTTL: time.Minute, MaxRunning: 2,
		Push: runtime.Policy{Private: true}}
	for name, edit := range map[string]func(*a2a.Config){
		"no turn timeout": func(c *a2a.Config) { c.TurnTimeout = 0 },
		"no task bound":   func(c *a2a.Config) { c.MaxTasks = 0 },
		"no task TTL":     func(c *a2a.Config) { c.TaskTTL = 0 },
		"no running cap":  func(c *a2a.Config) { c.MaxRunning = -1 },
	} {
		c := finished
		edit(&c)
		if s, err := a2a.New(context.Background(), nil, nil, nil, nil, c); err == nil || s != nil {
			t.Errorf("%s: New = %v, %v; want an error", name, s, err)
		}
	}
	s, err := a2a.New(context.Background(), nil, nil, nil, nil, finished)
	if err != nil {
		t.Fatal(err)
	}
	if !s.PushPolicy.Private {
		t.Errorf("New: PushPolicy %+v; want Config.Push", s.PushPolicy)
	}
	// The client is the guarded client of Config.Push: it reaches the
	// loopback receiver the policy admits.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer srv.Close()
	resp, err := s.PushClient.Get(srv.URL)
	if err != nil {
		t.Fatalf("push client with a policy admitting loopback: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("push client: status %d, want 204", resp.StatusCode)
	}
}
