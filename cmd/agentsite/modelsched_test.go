package main

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// TestModelSchedulerMetrics: the node's scheduler reports on the node's
// registry, per endpoint: requests in flight, waiting, and their waits.
func TestModelSchedulerMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := newModelScheduler(Config{LLMConcurrency: 1, LLMQueue: 4}, reg)
	if err != nil {
		t.Fatal(err)
	}
	const ep = "https://llm.example/v1/chat/completions"
	release, err := s.Acquire(context.Background(), modelsched.Request{Endpoint: ep, Caller: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if got := gauge(t, reg, "agentsite_llm_in_flight", ep); got != 1 {
		t.Errorf("in flight %v, want 1", got)
	}
	release()
	if got := gauge(t, reg, "agentsite_llm_in_flight", ep); got != 0 {
		t.Errorf("in flight after release %v, want 0", got)
	}
	if got := gauge(t, reg, "agentsite_llm_queue_length", ep); got != 0 {
		t.Errorf("queue length %v, want 0", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "agentsite_llm_queue_wait_seconds" {
			if n := mf.GetMetric()[0].GetHistogram().GetSampleCount(); n != 1 {
				t.Errorf("%d waits observed, want 1", n)
			}
			return
		}
	}
	t.Error("no agentsite_llm_queue_wait_seconds")
}

// gauge is the value of gauge name for endpoint ep on reg.
func gauge(t *testing.T, reg *prometheus.Registry, name, ep string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == ep {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no %s{endpoint=%q}", name, ep)
	return 0
}
