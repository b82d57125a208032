package a2a_test

import (
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestConciergePrefersHealthy: a failing agent is left out while another
// matches, listed (and said to be failing) when it alone matches, and every
// agent in an answer carries its health.
func TestConciergePrefersHealthy(t *testing.T) {
	e, _ := newEnv(t, nil)
	now := time.Now()
	broken := e.SeedAgent("", SimpleInput("weather-broken", "Weather Broken", "weather")).Record.ID
	good := e.SeedAgent("", SimpleInput("weather-good", "Weather Good", "weather")).Record.ID
	fresh := e.SeedAgent("", SimpleInput("weather-fresh", "Weather Fresh", "weather")).Record.ID
	storm := e.SeedAgent("", SimpleInput("storm-bot", "Storm Bot", "storm")).Record.ID
	e.SetHealth(broken, agent.Health{State: agent.HealthFailing, CheckedAt: now})
	e.SetHealth(good, agent.Health{State: agent.HealthHealthy, LatencyMS: 80, SuccessRate: 1, LastOKAt: now, CheckedAt: now})
	e.SetHealth(storm, agent.Health{State: agent.HealthFailing, CheckedAt: now})

	m := answerOf(t, call(e, "/a2a", "message/send", send(message("weather", ""))))
	got := map[string]string{}
	for _, a := range found(t, m) {
		got[a.ID] = a.Health
	}
	if len(got) != 2 || got[good] != agent.HealthHealthy || got[fresh] != agent.HealthUnknown {
		t.Errorf("weather found %v, want %s healthy and %s unknown, not the failing %s", got, good, fresh, broken)
	}
	if txt := text(m.Parts); strings.Contains(txt, "Weather Broken") || !strings.Contains(txt, "healthy") {
		t.Errorf("text = %q", txt)
	}

	// A sentence, searched word by word, leaves it out too.
	for _, a := range found(t, answerOf(t, call(e, "/a2a", "message/send", send(message("any weather today", ""))))) {
		if a.ID == broken {
			t.Errorf("sentence found the failing agent")
		}
	}

	// Only a failing agent matches: it is still named, with its state.
	m = answerOf(t, call(e, "/a2a", "message/send", send(message("storm", ""))))
	if agents := found(t, m); len(agents) != 1 || agents[0].ID != storm || agents[0].Health != agent.HealthFailing {
		t.Errorf("storm found %+v", agents)
	}
	if txt := text(m.Parts); !strings.Contains(txt, "failing") {
		t.Errorf("text = %q, want the failing state said", txt)
	}
}
