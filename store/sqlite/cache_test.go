package sqlite_test

import (
	"testing"
	"time"

	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/storetest"
)

// The read cache must be invisible: the whole conformance suite, which
// reads right after every kind of write, passes through it, composed into
// a Store as cmd/agentsite composes it (with the backends' and the
// conversations' caches). A long TTL makes any missed invalidation show
// up as a failure.
func TestConformanceThroughCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db := mustOpen(t)
		c := store.NewCache(db, time.Hour, 1000)
		return store.Composed{
			Network: c, Backends: c.Backends(db), Accounts: db,
			Sessions: db, Conversations: c.Conversations(db), Memories: db, Conn: db,
		}
	})
}
