package runtime_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
)

// isSummaryRequest tells the request that folds turns from a turn's.
func isSummaryRequest(req fakellm.Request) bool {
	return len(req.Messages) > 0 && strings.HasPrefix(req.Messages[0].Content, "You keep the memory of a conversation")
}

// longHistory is n messages, user and agent in turn, of ~200 bytes each,
// each named by its place ("turn-07").
func longHistory(n int) []agent.ChatMessage {
	var h []agent.ChatMessage
	for i := range n {
		role := agent.RoleUser
		if i%2 == 1 {
			role = agent.RoleAgent
		}
		h = append(h, agent.ChatMessage{Role: role, Text: fmt.Sprintf("turn-%02d ", i) + strings.Repeat("words ", 32)})
	}
	return h
}

// lockedLog is a log buffer the runtime writes while the test reads.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// historyAgent is an llm agent with a history budget of 500 tokens on a
// fake model, whose summary requests answer summary ("" : none).
func historyAgent(t *testing.T, summary string) (*runtime.Runtime, *fakellm.Server, *lockedLog) {
	t.Helper()
	model := &fakellm.Server{Model: "demo", Script: func(req fakellm.Request) fakellm.Reply {
		if isSummaryRequest(req) {
			return fakellm.Reply{Text: summary}
		}
		return fakellm.Reply{Text: "noted"}
	}}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	b := agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1", Model: "demo", SystemPrompt: "Be brief.", HistoryTokens: 500}
	var logs lockedLog
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil },
		runtime.RuntimeOptions{AllowPrivate: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(func() { _ = rt.Close() })
	return rt, model, &logs
}

// turnRequests are the requests of turns (not summaries) the model saw.
func turnRequests(model *fakellm.Server) (turns []fakellm.Request, summaries []fakellm.Request) {
	for _, r := range model.Requests() {
		if isSummaryRequest(r) {
			summaries = append(summaries, r)
		} else {
			turns = append(turns, r)
		}
	}
	return turns, summaries
}

func requestText(req fakellm.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		b.WriteString(m.Role + ": " + m.Content + "\n")
	}
	return b.String()
}

// TestLLMHistoryFoldsIntoSummary: a history over the agent's budget has
// its oldest turns folded into a summary the model reads as a system
// message after the system prompt, the recent turns kept as they are; the
// next turn of the conversation reuses the summary instead of asking for
// it again.
func TestLLMHistoryFoldsIntoSummary(t *testing.T) {
	rt, model, _ := historyAgent(t, "SUMMARY: the person told of turns zero to nine.")
	hist := longHistory(20) // ~20 × 62 tokens, over 500
	reply, err := rt.Answer(t.Context(), agent.Turn{AgentID: "a1", ConversationID: "c1", History: hist, Text: "first question"}, nil)
	if err != nil || reply != "noted" {
		t.Fatalf("turn 1: %q, %v", reply, err)
	}
	hist = append(hist, agent.ChatMessage{Role: agent.RoleUser, Text: "first question"}, agent.ChatMessage{Role: agent.RoleAgent, Text: "noted"})
	if _, err := rt.Answer(t.Context(), agent.Turn{AgentID: "a1", ConversationID: "c1", History: hist, Text: "second question"}, nil); err != nil {
		t.Fatalf("turn 2: %v", err)
	}

	turns, summaries := turnRequests(model)
	if len(summaries) != 1 || len(turns) != 2 {
		t.Fatalf("%d summary requests and %d turn requests, want 1 and 2", len(summaries), len(turns))
	}
	if s := requestText(summaries[0]); !strings.Contains(s, "turn-00") || strings.Contains(s, "turn-19") {
		t.Errorf("the summary request does not fold the oldest turns alone:\n%s", s)
	}
	for i, req := range turns {
		ms := req.Messages
		if len(ms) < 3 || ms[0].Role != "system" || ms[0].Content != "Be brief." ||
			ms[1].Role != "system" || !strings.Contains(ms[1].Content, "SUMMARY: the person told of turns zero to nine.") {
			t.Fatalf("turn %d: the request does not start with the system prompt and the summary:\n%s", i+1, requestText(req))
		}
		text := requestText(req)
		if strings.Contains(text, "turn-00") || strings.Contains(text, "turn-01 ") {
			t.Errorf("turn %d: the oldest turns are still sent:\n%s", i+1, text)
		}
		if !strings.Contains(text, "turn-18") || !strings.Contains(text, "turn-19") {
			t.Errorf("turn %d: the recent turns are missing:\n%s", i+1, text)
		}
		if ms[2].Role != "user" {
			t.Errorf("turn %d: the kept turns start with %s, not the person's message", i+1, ms[2].Role)
		}
		if got, want := req.LastUser(), []string{"first question", "second question"}[i]; got != want {
			t.Errorf("turn %d: last user message %q, want %q", i+1, got, want)
		}
	}
	if !strings.Contains(requestText(turns[1]), "first question") {
		t.Error("turn 2 lost the turn before it")
	}
}

// TestLLMHistorySummaryFailsCuts: when the model writes no summary, the
// oldest turns are cut (and that is logged); the turn is answered.
func TestLLMHistorySummaryFailsCuts(t *testing.T) {
	rt, model, logs := historyAgent(t, "")
	reply, err := rt.Answer(t.Context(), agent.Turn{AgentID: "a1", ConversationID: "c1", History: longHistory(20), Text: "question"}, nil)
	if err != nil || reply != "noted" {
		t.Fatalf("turn: %q, %v", reply, err)
	}
	turns, summaries := turnRequests(model)
	if len(summaries) != 1 || len(turns) != 1 {
		t.Fatalf("%d summary requests and %d turn requests", len(summaries), len(turns))
	}
	text := requestText(turns[0])
	if strings.Contains(text, "Summary of the earlier part") || strings.Contains(text, "turn-00") || !strings.Contains(text, "turn-19") {
		t.Errorf("the request after a failed summary:\n%s", text)
	}
	if !strings.Contains(logs.String(), "history summary failed") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}
}

// TestLLMHistorySummaryPerCaller: a summary is kept for its caller: a
// turn another node sends under the same conversation id, with the same
// messages, is not given it but has its own made.
func TestLLMHistorySummaryPerCaller(t *testing.T) {
	rt, model, _ := historyAgent(t, "SUMMARY of the person's own conversation")
	turn := agent.Turn{AgentID: "a1", ConversationID: "c1", History: longHistory(20), Text: "question"}
	for _, caller := range []string{"user:1", "user:1", "peer:12D3KooWOther"} {
		if _, err := rt.Answer(agent.WithCaller(t.Context(), caller), turn, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, summaries := turnRequests(model); len(summaries) != 2 {
		t.Errorf("%d summary requests for two callers, want 2", len(summaries))
	}
}
