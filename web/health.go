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
	v := HealthView{State: h.State, LatencyMS: h.LatencyMS, LastOK: h.LastOKAt, Uses7d: h.Uses7d}
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

// statusLineTone is the colour of a card's status dot: its liveness and
// its health in one ("ok", "warn", "bad", "off", "unknown").
func statusLineTone(status, health string) string {
	switch status {
	case "offline":
		return "off"
	case "stale":
		return "warn"
	}
	switch health {
	case agent.HealthHealthy:
		return "ok"
	case agent.HealthDegraded:
		return "warn"
	case agent.HealthFailing:
		return "bad"
	}
	return "unknown"
}

// statusLineWord is the status help anchor the line links to: the
// liveness when the agent is not online, else its health.
func statusLineWord(status, health string) string {
	if status != "online" || health == "" || health == agent.HealthUnknown {
		return status
	}
	return health
}

// statusLineText is the line's words: "Online", "Online, slow or
// failing at times", "Not heard from lately", "Offline".
func statusLineText(status, health string) string {
	switch status {
	case "offline":
		return "Offline"
	case "stale":
		return "Not heard from lately"
	case "online":
	default:
		return statusLabel(status)
	}
	switch health {
	case agent.HealthHealthy:
		return "Online and answering"
	case agent.HealthDegraded:
		return "Online, slow or failing at times"
	case agent.HealthFailing:
		return "Online but failing"
	}
	return "Online, not checked yet"
}

// statusLineTitle is the line's tooltip: both signals explained, and
// when it last answered.
func statusLineTitle(status string, h HealthView) string {
	var s string
	switch status {
	case "online":
		s = "Its host's heartbeats arrive."
	case "stale":
		s = "Its host has not been heard from for a while; it may not answer."
	case "offline":
		s = "Its host is gone or its listing expired."
	}
	s += " " + healthTitle(h.State)
	if h.LastOKAgo != "" {
		s += " Last answered " + h.LastOKAgo + "."
	}
	return s
}
