package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The demo's pause per step: none at 0 (tests and benchmarks run the
// script at full speed), a wait cut short when the request ends, and said
// in the planner's answer so nobody takes it for the planet's speed.
func TestDemoPlannerPause(t *testing.T) {
	called := false
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true })
	if got := pausing(h, 0); got == nil {
		t.Fatal("pausing(h, 0) = nil")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", nil)
	pausing(h, time.Hour).ServeHTTP(httptest.NewRecorder(), r)
	if called {
		t.Error("a request that ended during the pause reached the model")
	}
	pausing(h, 0).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/", nil))
	if !called {
		t.Error("pausing(h, 0) did not serve the request")
	}

	if d := (demoPlanner{}).disclaimer(); d != demoDisclaimer {
		t.Errorf("without a pause the answer says %q", d)
	}
	if d := (demoPlanner{Pause: 700 * time.Millisecond}).disclaimer(); !strings.Contains(d, "I wait 700ms before each step") || !strings.HasSuffix(d, ".)") {
		t.Errorf("with a pause the answer says %q", d)
	}
	d, err := newDemo(nil, nil, nil)
	if err != nil || d.cfg.StepPause != demoStepPause {
		t.Errorf("default --step-pause = %v (%v), want %v", d.cfg.StepPause, err, demoStepPause)
	}
}
