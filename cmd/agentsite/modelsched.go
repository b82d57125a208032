package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent/runtime/modelsched"
)

// modelMetrics report the model scheduler per endpoint: requests waiting,
// requests in flight, and how long each waited for its slot.
type modelMetrics struct {
	waiting  *prometheus.GaugeVec
	inFlight *prometheus.GaugeVec
	wait     *prometheus.HistogramVec
}

// newModelMetrics registers the model scheduler's metrics on reg.
func newModelMetrics(reg prometheus.Registerer) (*modelMetrics, error) {
	m := &modelMetrics{
		waiting: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "llm", Name: "queue_length",
			Help: "Completion requests of llm agents waiting for a slot, by model endpoint (--llm-queue bounds it).",
		}, []string{"endpoint"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "agentsite", Subsystem: "llm", Name: "in_flight",
			Help: "Completion requests of llm agents holding a slot, by model endpoint (--llm-concurrency bounds it).",
		}, []string{"endpoint"}),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "agentsite", Subsystem: "llm", Name: "queue_wait_seconds",
			Help:    "How long a completion request waited for its slot, by model endpoint.",
			Buckets: []float64{.001, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"endpoint"}),
	}
	for _, c := range []prometheus.Collector{m.waiting, m.inFlight, m.wait} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Waiting implements modelsched.Observer.
func (m *modelMetrics) Waiting(endpoint string, n int) {
	m.waiting.WithLabelValues(endpoint).Set(float64(n))
}

// InFlight implements modelsched.Observer.
func (m *modelMetrics) InFlight(endpoint string, n int) {
	m.inFlight.WithLabelValues(endpoint).Set(float64(n))
}

// Waited implements modelsched.Observer.
func (m *modelMetrics) Waited(endpoint string, d time.Duration) {
	m.wait.WithLabelValues(endpoint).Observe(d.Seconds())
}

// newModelScheduler is the one scheduler of this node's model endpoints
// (--llm-concurrency, --llm-queue), its metrics on reg.
func newModelScheduler(cfg Config, reg prometheus.Registerer) (*modelsched.Scheduler, error) {
	m, err := newModelMetrics(reg)
	if err != nil {
		return nil, err
	}
	return modelsched.New(modelsched.Options{Limit: cfg.LLMConcurrency, MaxQueue: cfg.LLMQueue, Observer: m})
}
