package handlers

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	gatherer prometheus.Gatherer
}

// listingsCollector reports listings by status at scrape time, straight from
// the store, so the gauge can never drift from the truth.
type listingsCollector struct {
	st   store.Store
	desc *prometheus.Desc
}

func (c *listingsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *listingsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := c.st.CountByStatus(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, st := range []string{store.StatusOnline, store.StatusStale, store.StatusOffline} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), st)
	}
}

// newMetrics registers the HTTP metrics and the listings gauge with reg. If
// reg is also a Gatherer, /metrics serves it; otherwise a fresh registry.
func newMetrics(reg prometheus.Registerer, st store.Store) (*metrics, error) {
	if reg == nil {
		r := prometheus.NewRegistry()
		r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		reg = r
	}
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests by method, route pattern and status code.",
		}, []string{"method", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "agentsite", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request latency by method and route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"method", "route"}),
	}
	lc := &listingsCollector{st: st, desc: prometheus.NewDesc("agentsite_listings", "Cached agent listings by status (tombstones excluded).", []string{"status"}, nil)}
	for _, c := range []prometheus.Collector{m.requests, m.latency, lc} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	if g, ok := reg.(prometheus.Gatherer); ok {
		m.gatherer = g
	} else {
		m.gatherer = prometheus.DefaultGatherer
	}
	return m, nil
}

func (m *metrics) observeRequest(method, route string, status int, d time.Duration) {
	m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(method, route).Observe(d.Seconds())
}

// handler serves /metrics; with a token set, only to requests bearing it
// (metrics tell an attacker how loaded the node is and what it hosts).
func (m *metrics) handler(token string) http.Handler {
	// A slow store must not hide every other metric: serve what was
	// gathered and count the error.
	h := promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			httpkit.WriteJSONError(w, httpkit.Errorf(http.StatusUnauthorized, string(agent.CodeUnauthorized), "Send 'Authorization: Bearer <metrics token>'."))
			return
		}
		h.ServeHTTP(w, r)
	})
}
