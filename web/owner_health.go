package web

import (
	"sort"
	"strconv"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// OwnerHealth is a local agent's health as its owner sees it on the
// account page and the edit form: the state, when it was last checked,
// and the last probe's failure in words they can act on. Only the owner
// sees LastError: it names the backend's host.
type OwnerHealth struct {
	State      string // healthy | degraded | failing | unknown
	LatencyMS  int    // median answer time over the last hour; 0: none
	CheckedAt  time.Time
	CheckedAgo string // "2 min ago"; "" when never checked
	LastError  string // the last probe's failure; "" when it succeeded
}

// BackendTest is what the forms' Test backend button found: the settings
// were invalid (Invalid, by error key, and nothing was called), or one
// probe ran (Ran) and reached the backend (OK, in Latency) or failed
// (Message).
type BackendTest struct {
	Ran     bool
	OK      bool
	Builtin bool // a built-in backend: nothing to reach
	Latency time.Duration
	Message string
	Invalid map[string]string
}

// StatusHelpView is the page explaining every status word.
type StatusHelpView struct {
	Page Page
	// SlowAfter and FailingProbes are the tracker's thresholds, for the
	// explanations of degraded and failing.
	SlowAfter     time.Duration
	FailingProbes int
}

// backendLabels name the backend fields in the Test backend result.
var backendLabels = map[string]string{
	"backend.kind": "Kind", "backend.builtin": "Agent", "backend.url": "URL", "backend.model": "Model",
	"backend.system_prompt": "System prompt", "backend.api_key": "API key", "backend.tool": "Tool",
	"backend.delegate": "May call other agents",
}

// Problems are the setting errors that stopped the test, labelled as the
// form labels their fields, in a stable order.
func (t BackendTest) Problems() []string {
	out := make([]string, 0, len(t.Invalid))
	for k, m := range t.Invalid {
		label, ok := backendLabels[k]
		if !ok {
			label = k
		}
		out = append(out, label+": "+m)
	}
	sort.Strings(out)
	return out
}

// Summary is the result in a sentence: "Reached in 120 ms", or why not.
func (t BackendTest) Summary() string {
	switch {
	case !t.Ran:
		return "Fix the backend settings first; nothing was sent."
	case t.Builtin:
		return "Built-in agents run on this node: there is nothing to reach."
	case t.OK:
		return "Reached in " + Millis(t.Latency)
	}
	return "Not reached: " + t.Message
}

// Millis is a latency in whole milliseconds ("120 ms"), "<1 ms" below one.
func Millis(d time.Duration) string {
	if d < time.Millisecond {
		return "<1 ms"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
}

// healthWord is state if it is one of the four words, else unknown, for
// the help link's anchor.
func healthWord(state string) string {
	switch state {
	case agent.HealthHealthy, agent.HealthDegraded, agent.HealthFailing:
		return state
	}
	return agent.HealthUnknown
}
