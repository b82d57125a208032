package sqlite_test

import (
	"testing"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/storetest"
)

// TestSyncOwnConformance holds SQLite to own pages' reads (storetest).
func TestSyncOwnConformance(t *testing.T) {
	storetest.RunSyncOwn(t, func(t *testing.T) store.Store { return mustOpen(t) })
}
