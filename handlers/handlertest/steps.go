package handlertest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
)

// StepJSON is a delegation step as the chat stores it (the text of a
// message with role agent.RoleStep).
func StepJSON(t testing.TB, s agent.Step) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// StepLine is what a rendered step line says.
type StepLine struct {
	Tool, State, Summary, Question, Reply string
}

// ChatSteps are the step lines of a chat page, in order.
func ChatSteps(doc *goquery.Document) []StepLine {
	var out []StepLine
	Testid(doc, "step").Each(func(_ int, s *goquery.Selection) {
		out = append(out, StepLine{
			Tool:     s.AttrOr("data-tool", ""),
			State:    s.AttrOr("data-state", ""),
			Summary:  Text(s.Find(".step-summary").Clone().Find("[hidden]").Remove().End()),
			Question: s.Find(".step-question").Text(),
			Reply:    s.Find(".step-reply").Text(),
		})
	})
	return out
}

// GatedAnswerer passes turns on to Next, but holds those for agent AgentID
// until Open is closed (or the turn is cancelled): a delegation that is
// still under way while a test looks at it.
type GatedAnswerer struct {
	Next    chat.Answerer
	AgentID string
	Open    chan struct{}
}

// Answer implements chat.Answerer.
func (g *GatedAnswerer) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	if t.AgentID == g.AgentID {
		select {
		case <-g.Open:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return g.Next.Answer(ctx, t, emit)
}
