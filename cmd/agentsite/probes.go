package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
)

// healthOptions fit the health tracker to the probe interval: the window
// (an hour) and the recent part the state judges (ten minutes) each hold
// a few probes even at a long interval, so an agent does not turn
// "unknown" between two probes.
func healthOptions(interval time.Duration) registry.HealthOptions {
	window := max(registry.DefaultHealthWindow, 2*interval+interval/5)
	return registry.HealthOptions{
		Window: window,
		Recent: min(window, max(registry.DefaultHealthRecent, 3*interval)),
	}
}

// probeMetrics count the health probes by backend kind and outcome
// ("ok" or an error code) and time them by kind.
type probeMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newProbeMetrics registers the probe metrics on reg.
func newProbeMetrics(reg prometheus.Registerer) (*probeMetrics, error) {
	m := &probeMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Name: "probe_total",
			Help: "Health probes of this node's agents by backend kind and outcome (ok, or the failure's error code).",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "agentsite", Name: "probe_duration_seconds",
			Help:    "Health probe latency by backend kind (runtime.ProbeTimeout, 10s, bounds it).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"kind"}),
	}
	for _, c := range []prometheus.Collector{m.total, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// ObserveProbe implements registry.ProbeObserver.
func (m *probeMetrics) ObserveProbe(kind string, res runtime.ProbeResult) {
	m.total.WithLabelValues(kind, res.Outcome()).Inc()
	m.duration.WithLabelValues(kind).Observe(res.Latency.Seconds())
}
