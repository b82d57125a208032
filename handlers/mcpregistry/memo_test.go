package mcpregistry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
	"github.com/agentsite/agentsite/store"
)

// countedSearches is the node's read cache, counting the searches the
// handler asks it for.
type countedSearches struct {
	*store.Cache
	searches atomic.Int64
}

func (c *countedSearches) SearchAgents(ctx context.Context, q store.SearchQuery) (store.SearchPage, error) {
	c.searches.Add(1)
	return c.Cache.SearchAgents(ctx, q)
}

// TestServersSearchMemo: GET /v0.1/servers?search= is answered as GET
// /api/v1/agents is, from the read cache's memo of the encoded page: a
// repeated search runs no search and encodes nothing (before, every
// request searched and encoded its page again), a write shows at once,
// and the bytes are those the first answer had.
func TestServersSearchMemo(t *testing.T) {
	st := handlertest.OpenSQLite(t)
	cache := store.NewCache(st, time.Hour, 1000)
	e := handlertest.NewWith(t, store.Composed{Network: cache, Backends: st, Accounts: st, Sessions: st, Conversations: st, Memories: st, Conn: st})
	e.SeedEcho("echo-one", "Echo One")
	counted := &countedSearches{Cache: cache}
	h := &mcpregistry.Handler{Catalog: counted, PublicURL: "https://node.example"}
	get := func() string {
		t.Helper()
		rec := httptest.NewRecorder()
		h.List(rec, httptest.NewRequest(http.MethodGet, "/v0.1/servers?search=echo", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	first := get()
	for range 3 {
		if again := get(); again != first {
			t.Fatalf("a repeated search changed without a write:\n%s\n%s", first, again)
		}
	}
	if n := counted.searches.Load(); n != 0 {
		t.Fatalf("%d searches reached the catalogue for 4 identical requests; want none (the memo's load uses the store behind the cache)", n)
	}
	e.SeedEcho("echo-two", "Echo Two")
	if after := get(); after == first {
		t.Fatal("a listing registered since is not in the answer")
	}
}
