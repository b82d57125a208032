package store_test

import (
	"slices"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// TestHealthPasses: without a health filter a search walks the agents that
// are not failing, then the failing ones; a filter keeps only the passes
// that can match it.
func TestHealthPasses(t *testing.T) {
	for _, tc := range []struct {
		health []string
		want   []bool
	}{
		{nil, []bool{false, true}},
		{[]string{agent.HealthHealthy}, []bool{false}},
		{[]string{agent.HealthFailing}, []bool{true}},
		{[]string{agent.HealthFailing, agent.HealthFailing}, []bool{true}},
		{[]string{agent.HealthFailing, agent.HealthDegraded}, []bool{false, true}},
	} {
		if got := store.HealthPasses(tc.health); !slices.Equal(got, tc.want) {
			t.Errorf("HealthPasses(%v) = %v, want %v", tc.health, got, tc.want)
		}
	}
}
