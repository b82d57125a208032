package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestNodeStoreMetrics: serve.go hands the node's registry to the engine,
// so /metrics has the store series, recorded by the engine under each
// statement's name: here the open's ping and the search behind the read
// cache.
func TestNodeStoreMetrics(t *testing.T) {
	m := startNode(t, t.TempDir(), "--demo-agents=false")
	t.Cleanup(func() { _ = m.Close() })
	var agents agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents", &agents)

	resp, err := http.Get(m.HTTPURL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`agentsite_store_query_duration_seconds_count{op="search_agents"}`,
		`agentsite_store_query_duration_seconds_count{op="ping"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(string(body), `op="unnamed"`) {
		t.Error("/metrics has a store statement without a name")
	}
}
