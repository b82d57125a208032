package postgres_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/storetest"
)

// TestSyncOwnConformance holds Postgres to own pages' reads (storetest).
func TestSyncOwnConformance(t *testing.T) {
	storetest.RunSyncOwn(t, func(t *testing.T) store.Store { return pgtest.Open(t) })
}
