package postgres_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/storetest"
)

// TestConformance holds the Postgres engine to the behaviour both engines
// share, opened as a node opens it: with a store deadline and metrics.
func TestConformance(t *testing.T) {
	storetest.RunObserved(t, openWith)
}

// TestConformanceBigCatalogue runs the suite with every search planned
// for its own values (an unnamed statement), as on a catalogue of
// customPlanRows listings or more.
func TestConformanceBigCatalogue(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db := pgtest.Open(t)
		postgres.PlanEverySearch(db)
		return db
	})
}

// TestMetrics: the QueryTracer records every statement by name.
func TestMetrics(t *testing.T) {
	storetest.Metrics(t, openWith)
}

func openWith(t *testing.T, opts store.Options) store.Store { return pgtest.OpenWith(t, opts) }
