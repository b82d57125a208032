package handlers_test

import (
	"net/http"
	"testing"

	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestReadyzSearchIndex: /readyz shows the search index's state, and
// while it retries a failed read the error's kind; none of them makes the
// node unready (searches use the database meanwhile).
func TestReadyzSearchIndex(t *testing.T) {
	var state, kind string
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) {
		c.SearchIndexStatus = func() (string, string) { return state, kind }
	})
	for _, c := range []struct{ state, kind string }{{"loading", ""}, {"retrying", "timeout"}, {"ok", ""}} {
		state, kind = c.state, c.kind
		resp := e.Do("GET", "/readyz", nil)
		WantStatus(t, resp, http.StatusOK)
		ready := Decode[struct {
			Ready  bool              `json:"ready"`
			Checks map[string]string `json:"checks"`
		}](t, resp)
		if !ready.Ready || ready.Checks["search_index"] != c.state || ready.Checks["search_index_error"] != c.kind {
			t.Errorf("index %s %s: readyz = %+v", c.state, c.kind, ready)
		}
	}
}
