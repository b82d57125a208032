package web

import (
	"fmt"
	"net/url"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// HealthOf is the badge of h as seen at now; a host that said nothing
// yet reads as unknown.
func HealthOf(h agent.Health, now time.Time) HealthView {
	v := HealthView{State: h.State, LatencyMS: h.LatencyMS, LastOK: h.LastOKAt}
	if !agent.IsHealthState(v.State) {
		v.State = agent.HealthUnknown
	}
	if !h.LastOKAt.IsZero() {
		v.LastOKAgo = Ago(h.LastOKAt, now)
	}
	return v
}

// StatusHelpHref is the explanation of a status or health word on the
// status help page, which has an anchor per word.
func StatusHelpHref(word string) string { return "/help/status#" + url.PathEscape(word) }

// healthLabel is the word on the badge; unknown is said quietly, as what
// it means.
func healthLabel(state string) string {
	switch state {
	case agent.HealthHealthy:
		return "Healthy"
	case agent.HealthDegraded:
		return "Degraded"
	case agent.HealthFailing:
		return "Failing"
	}
	return "Not checked yet"
}

// healthTitle is the badge's tooltip: the word explained in one line.
func healthTitle(state string) string {
	switch state {
	case agent.HealthHealthy:
		return "Its host's checks and recent chats succeed, quickly."
	case agent.HealthDegraded:
		return "Slow, or some of its host's checks or recent chats failed."
	case agent.HealthFailing:
		return "Its host's last checks failed, or most recent chats did: it may not answer."
	}
	return "Its host has not checked this agent yet."
}

func healthClass(state string) string {
	switch state {
	case agent.HealthHealthy, agent.HealthDegraded, agent.HealthFailing:
		return "badge health health-" + state
	}
	return "badge health health-unknown"
}

// latencyText is the median answer time, rounded as people read it:
// "~120 ms", "~2.5 s".
func latencyText(ms int) string {
	if ms < 1000 {
		return fmt.Sprintf("~%d ms", ms)
	}
	return fmt.Sprintf("~%.1f s", float64(ms)/1000)
}
