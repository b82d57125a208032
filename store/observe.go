package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
)

// Options are what an engine does around every call, set by whoever opens
// it (cmd/agentsite, from --store-timeout). The zero value means no
// deadline and no metrics, which is what tests and tools get.
type Options struct {
	// Timeout is the deadline of every store call; a caller's earlier
	// deadline stays. 0 means none. It is why a stalled database cannot
	// hold requests (and their connections) for as long as the stall
	// lasts: the call fails with ErrUnavailable instead, and the engines
	// make sure it then did not take effect.
	Timeout time.Duration
	// Metrics receives the latency and errors of every statement; nil
	// records nothing.
	Metrics *Metrics
}

// Bound puts one store call under the store deadline. Engines call it in
// their one path to the database: around each statement outside a
// transaction and around each transaction as a whole. Every store method
// is one statement or one transaction, so that is one deadline per call.
//
// end releases the deadline and returns err, as ErrUnavailable (still
// wrapping err) when the store deadline cut the call; a caller's own
// cancellation or earlier deadline keeps its error: the client gave up,
// the store did not fail.
func (o Options) Bound(ctx context.Context) (bctx context.Context, end func(err error) error) {
	if o.Timeout <= 0 {
		return ctx, func(err error) error { return err }
	}
	bctx, cancel := context.WithTimeout(ctx, o.Timeout)
	return bctx, func(err error) error {
		cancel()
		if err == nil || errors.Is(err, ErrUnavailable) || ctx.Err() != nil || !errors.Is(bctx.Err(), context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("%w: no answer within the store deadline of %v: %w", ErrUnavailable, o.Timeout, err)
	}
}

// Metrics are the store's Prometheus series. The engines record into them
// from their own statement path (a pgx QueryTracer, the SQLite statement
// wrapper), labelled with each statement's name (StatementName).
type Metrics struct {
	latency *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

// NewMetrics creates the store's series and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "agentsite", Subsystem: "store", Name: "query_duration_seconds",
			Help:    "Store statement latency by operation (the statement's name; acquire: waiting for a pooled connection).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "agentsite", Subsystem: "store", Name: "errors_total",
			Help: "Store statements that failed with an error other than not-found or stale, by operation.",
		}, []string{"op"}),
	}
	reg.MustRegister(m.latency, m.errors)
	return m
}

// Observe records one statement named op that took d and ended with err,
// already mapped to the store's sentinels by the engine: ErrNotFound and
// ErrStale are answers, not failures. A nil Metrics records nothing.
func (m *Metrics) Observe(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	m.latency.WithLabelValues(op).Observe(d.Seconds())
	if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrStale) {
		m.errors.WithLabelValues(op).Inc()
	}
}

// namePrefix starts the first line of every statement the engines send:
// "-- name: op", op a fixed snake_case word. The name labels the metrics
// (a fixed word per statement keeps the label set small) and also shows in
// the server's view of running and slow statements (pg_stat_activity, the
// slow query log), where it tells which store call a statement serves.
const namePrefix = "-- name: "

// StatementName returns the metrics label of a SQL statement: the name in
// its leading "-- name: " comment; "begin", "commit" or "rollback" for the
// transaction control the drivers send; otherwise "unnamed", which the
// engines' conformance tests make sure none of their statements is.
func StatementName(sql string) string {
	s := strings.TrimLeft(sql, " \t\r\n")
	if rest, ok := strings.CutPrefix(s, namePrefix); ok {
		name, _, _ := strings.Cut(rest, "\n")
		return strings.TrimSpace(name)
	}
	word := s
	if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }); i >= 0 {
		word = s[:i]
	}
	switch w := strings.ToLower(word); w {
	case "begin", "commit", "rollback":
		return w
	}
	return "unnamed"
}
