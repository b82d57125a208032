package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/internal/waitfor"
)

// TestNodeStoreMetrics: serve.go hands the node's registry to the engine,
// so /metrics has the store series, recorded by the engine under each
// statement's name: here the open's ping, a search the database answers
// (by name: the search index answers the others once it has loaded) and
// the index's read of the change feed.
func TestNodeStoreMetrics(t *testing.T) {
	m := startNode(t, t.TempDir(), "--demo-agents=false")
	t.Cleanup(func() { _ = m.Close() })
	var agents agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents?sort=name", &agents)

	metrics := func() string {
		resp, err := http.Get(m.HTTPURL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return string(body)
	}
	waitfor.Until(t, 30*time.Second, "the search index's first read of the change feed in /metrics", func() bool {
		return strings.Contains(metrics(), `agentsite_store_query_duration_seconds_count{op="listing_changes"}`)
	})
	body := metrics()
	for _, want := range []string{
		`agentsite_store_query_duration_seconds_count{op="search_agents_by_name"}`,
		`agentsite_store_query_duration_seconds_count{op="ping"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `op="unnamed"`) {
		t.Error("/metrics has a store statement without a name")
	}
}
