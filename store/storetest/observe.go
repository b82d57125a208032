package storetest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/agentsite/agentsite/store"
)

// OpenerWith returns a fresh, empty, migrated store that applies opts
// (store deadline, metrics); it registers its own cleanup with t.Cleanup.
type OpenerWith func(t *testing.T, opts store.Options) store.Store

// RunObserved runs the suite the way a node opens its store, with a store
// deadline and metrics, so every statement goes through the engine's
// deadline and metrics path. Then it checks that the engine named every
// statement it sent: an unnamed one would be one more metrics label that
// says nothing (store.StatementName).
func RunObserved(t *testing.T, open OpenerWith) {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts := store.Options{Timeout: time.Minute, Metrics: store.NewMetrics(reg)}
	Run(t, func(t *testing.T) store.Store { return open(t, opts) })
	ops := metricLabels(t, reg, "agentsite_store_query_duration_seconds")
	if slices.Contains(ops, "unnamed") {
		t.Errorf("some statement has no -- name: comment; ops seen: %v", ops)
	}
	for _, want := range []string{"upsert_record", "search_agents", "create_user", "append_message", "session_commit", "begin", "commit"} {
		if !slices.Contains(ops, want) {
			t.Errorf("no statement recorded as %q; ops seen: %v", want, ops)
		}
	}
}

// Metrics checks the engine's statement metrics: the series keep their
// names, every statement is recorded under its name, and an answer (not
// found) is not counted as an error while a failure (a taken handle) is.
func Metrics(t *testing.T, open OpenerWith) {
	t.Helper()
	reg := prometheus.NewRegistry()
	s := open(t, store.Options{Metrics: store.NewMetrics(reg)})
	ctx := t.Context()
	pings := histogramCount(t, reg, "ping") // opening pings
	if _, err := s.GetAgent(ctx, "no-such-agent"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetAgent of a missing agent: %v, want ErrNotFound", err)
	}
	if _, err := s.CreateUser(ctx, "metered", "hash"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "metered", "hash"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("CreateUser of a taken handle: %v, want ErrConflict", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	for op, want := range map[string]uint64{"get_agent": 1, "create_user": 2, "ping": pings + 1} {
		if got := histogramCount(t, reg, op); got != want {
			t.Errorf("agentsite_store_query_duration_seconds{op=%q} count = %d, want %d", op, got, want)
		}
	}
	errs := metricLabels(t, reg, "agentsite_store_errors_total")
	if !slices.Equal(errs, []string{"create_user"}) {
		t.Errorf("agentsite_store_errors_total has ops %v, want only create_user (not found is an answer)", errs)
	}
}

// metricLabels returns the op labels of the series of family name.
func metricLabels(t *testing.T, reg prometheus.Gatherer, name string) []string {
	t.Helper()
	var ops []string
	for _, m := range family(t, reg, name) {
		ops = append(ops, opLabel(m))
	}
	slices.Sort(ops)
	return ops
}

// histogramCount is how many observations the latency histogram has for op.
func histogramCount(t *testing.T, reg prometheus.Gatherer, op string) uint64 {
	t.Helper()
	for _, m := range family(t, reg, "agentsite_store_query_duration_seconds") {
		if opLabel(m) == op {
			return m.GetHistogram().GetSampleCount()
		}
	}
	return 0
}

func family(t *testing.T, reg prometheus.Gatherer, name string) []*dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f.GetMetric()
		}
	}
	return nil
}

func opLabel(m *dto.Metric) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == "op" {
			return l.GetValue()
		}
	}
	return ""
}
