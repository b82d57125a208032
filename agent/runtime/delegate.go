package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// Delegator is how an agent reaches the rest of the planet during a turn:
// the chat use case, which routes a delegated message to any agent, local,
// over libp2p or external. Set Runtime.Delegator before serving; without
// one, delegate agents answer without tools.
type Delegator interface {
	// FindAgents searches the catalogue (tag narrows it, "" for any).
	FindAgents(ctx context.Context, query, tag string) ([]FoundAgent, error)
	// AskAgent runs one turn with agent agentID carrying trace (already
	// passed on by the caller, the turn spent from the tree's budget) and
	// returns its reply. A turn sent to another node hands it what is left
	// of that budget and takes back what it did not spend.
	AskAgent(ctx context.Context, trace agent.Trace, agentID, text string) (string, error)
	// Describe names an agent for people (display name, host node's short
	// name); best effort.
	Describe(ctx context.Context, agentID string) (name, host string)
}

// FoundAgent is one find_agents result, as the model reads it.
type FoundAgent struct {
	ID          string   `json:"agent_id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags,omitempty"`
	Host        string   `json:"host"`
	Status      string   `json:"status"`
}

// Tool names offered to delegate agents.
const (
	ToolFindAgents = "find_agents"
	ToolAskAgent   = "ask_agent"
)

// delegationTools are the function-calling tools of a delegate agent.
var delegationTools = []llmTool{
	{Type: "function", Function: llmFunction{
		Name:        ToolFindAgents,
		Description: "Search the AgentSite planet-wide catalogue for agents that can help. Returns agents with their ids.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","description":"what you need, in a few words"},` +
			`"tag":{"type":"string","description":"optional tag to narrow the search, e.g. math"}},` +
			`"required":["query"]}`),
	}},
	{Type: "function", Function: llmFunction{
		Name:        ToolAskAgent,
		Description: "Send a message to another agent (by the agent_id find_agents gave) and get its reply.",
		Parameters: json.RawMessage(`{"type":"object","properties":{` +
			`"agent_id":{"type":"string","description":"the agent's id"},` +
			`"text":{"type":"string","description":"the message to send it"}},` +
			`"required":["agent_id","text"]}`),
	}},
}

// maxToolResultBytes bounds what one tool result feeds back to the model.
const maxToolResultBytes = 16 << 10

// delegation runs the tool calls of one turn, within its budget.
type delegation struct {
	d     Delegator
	turn  agent.Turn
	calls int // tool calls made so far this turn
}

// budgetLeft reports whether another tool call may run.
func (dl *delegation) budgetLeft() bool { return dl.calls < agent.MaxDelegations }

// run answers one tool call: the text of a tool result, a refusal or a
// failure included (the model reads it and carries on; it is never an
// error of the turn, unless the turn itself was cancelled).
func (dl *delegation) run(ctx context.Context, c llmToolCall) (string, error) {
	if !dl.budgetLeft() {
		return toolErrorText(agent.ErrDelegationBudget), nil
	}
	dl.calls++
	switch c.Function.Name {
	case ToolFindAgents:
		var in struct{ Query, Tag string }
		if err := json.Unmarshal([]byte(c.Function.Arguments), &in); err != nil || strings.TrimSpace(in.Query) == "" {
			return `{"error":"find_agents wants {\"query\": \"...\"}"}`, nil
		}
		step := agent.Step{Tool: ToolFindAgents, Text: in.Query}
		dl.step(step)
		found, err := dl.d.FindAgents(ctx, in.Query, in.Tag)
		if err != nil {
			return dl.failed(ctx, step, err)
		}
		b, _ := json.Marshal(map[string]any{"agents": found})
		step.Reply = FoundText(len(found))
		step.Done = true
		dl.step(step)
		return string(b), nil
	case ToolAskAgent:
		var in struct {
			AgentID string `json:"agent_id"`
			Text    string `json:"text"`
		}
		if err := json.Unmarshal([]byte(c.Function.Arguments), &in); err != nil || in.AgentID == "" || strings.TrimSpace(in.Text) == "" {
			return `{"error":"ask_agent wants {\"agent_id\": \"...\", \"text\": \"...\"}"}`, nil
		}
		step := agent.Step{Tool: ToolAskAgent, AgentID: in.AgentID, Text: in.Text}
		step.AgentName, step.Host = dl.d.Describe(ctx, in.AgentID)
		dl.step(step)
		trace, err := dl.turn.Trace.Pass(dl.turn.AgentID, in.AgentID)
		if err != nil {
			return dl.failed(ctx, step, err)
		}
		reply, err := dl.d.AskAgent(ctx, trace, in.AgentID, in.Text)
		if err != nil {
			return dl.failed(ctx, step, err)
		}
		step.Reply, step.Done = reply, true
		dl.step(step)
		b, _ := json.Marshal(map[string]string{"reply": bound(reply, maxToolResultBytes)})
		return string(b), nil
	}
	return fmt.Sprintf(`{"error":"no tool named %q; use find_agents or ask_agent"}`, c.Function.Name), nil
}

// failed finishes a step with its error and returns the tool result the
// model reads. A cancelled turn ends instead.
func (dl *delegation) failed(ctx context.Context, step agent.Step, err error) (string, error) {
	if ctx.Err() != nil && !errors.Is(err, agent.ErrDelegationLoop) && !errors.Is(err, agent.ErrDelegationDepth) && !errors.Is(err, agent.ErrDelegationBudget) {
		return "", ctx.Err()
	}
	step.Error, step.Done = PublicMessage(err), true
	if e := agent.AsError(err); e != nil && e.Kind != agent.KindInternal {
		step.Error = e.Message
	}
	dl.step(step)
	return toolErrorText(err), nil
}

func (dl *delegation) step(s agent.Step) {
	if dl.turn.OnStep != nil {
		dl.turn.OnStep(s)
	}
}

// toolErrorText is a failed tool call as the model reads it.
func toolErrorText(err error) string {
	msg := PublicMessage(err)
	if msg == "" {
		msg = "the agent could not answer"
	}
	code := "failed"
	if e := agent.AsError(err); e != nil && e.Kind != agent.KindInternal {
		msg, code = e.Message, string(e.Code)
	}
	b, _ := json.Marshal(map[string]string{"error": msg, "code": code})
	return string(b)
}

// bound cuts s to at most n bytes on a rune boundary.
func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// FoundText is a find_agents step's outcome for people, in real plural
// forms: "no agents found", "1 agent found", "4 agents found".
func FoundText(n int) string {
	switch n {
	case 0:
		return "no agents found"
	case 1:
		return "1 agent found"
	}
	return fmt.Sprintf("%d agents found", n)
}
