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
		return "Available"
	case agent.HealthDegraded:
		return "Unreliable"
	case agent.HealthFailing:
		return "Not answering"
	}
	return "Not checked yet"
}

// healthTitle is the badge's tooltip: the word explained in one line.
func healthTitle(state string) string {
	switch state {
	case agent.HealthHealthy:
		return "It answers now: its node's checks and recent chats succeed, quickly."
	case agent.HealthDegraded:
		return "It answers, but slowly or not always: some of its node's checks or recent chats failed."
	case agent.HealthFailing:
		return "Its node is up but the agent fails: its last checks failed, or most recent chats did."
	}
	return "Its node has not checked this agent yet."
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

// statusLineText is the line's one word for what a visitor can act on:
// "Available" (it answers now), "Quiet" (its node has gone quiet), "Not
// answering" (its node is up but the agent fails), and "Unreliable",
// "Not checked yet", "Offline".
func statusLineText(status, health string) string {
	if status != "online" {
		return statusLabel(status)
	}
	return healthLabel(health)
}

// statusLineTitle is the line's tooltip: both signals explained, and
// when it last answered.
func statusLineTitle(status string, h HealthView) string {
	var s string
	if status != "online" {
		s = statusTitle(status)
	} else {
		s = healthTitle(h.State)
	}
	if h.LastOKAgo != "" {
		s += " Last answered " + h.LastOKAgo + "."
	}
	return s
}
