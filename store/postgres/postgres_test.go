package postgres_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/storetest"
)

// TestConformance holds the Postgres engine to the behaviour both engines
// share.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return pgtest.Open(t) })
}
