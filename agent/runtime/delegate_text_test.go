package runtime_test

import (
	"testing"

	"github.com/agentsite/agentsite/agent/runtime"
)

// A find_agents step says what it found in real plural forms, not
// "4 agent(s) found".
func TestFoundTextPlurals(t *testing.T) {
	for n, want := range map[int]string{0: "no agents found", 1: "1 agent found", 2: "2 agents found", 4: "4 agents found"} {
		if got := runtime.FoundText(n); got != want {
			t.Errorf("FoundText(%d) = %q, want %q", n, got, want)
		}
	}
}
