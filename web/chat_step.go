package web

import "github.com/agentsite/agentsite/agent"

// Step tools, as agent.Step.Tool names them in stored steps and step
// frames (runtime.ToolAskAgent, runtime.ToolFindAgents and
// runtime.StepToolCall; web does not import the runtime, and a portal
// test checks that they agree).
const (
	StepToolAsk  = "ask_agent"
	StepToolFind = "find_agents"
	StepToolCall = "call_tool"
)

// Step states: a step frame with done false is pending; a done one failed
// when it carries an error.
const (
	stepPending = "pending"
	stepDone    = "done"
	stepFailed  = "failed"
)

// ChatStep is one delegation the agent made during a turn, as a
// collapsible line of the conversation: "asked Calculator on node b3c4d5:
// 6*7 → 42". Every field is plain text (escaped by templ, filled in with
// textContent by chat.js).
type ChatStep struct {
	Tool   string // StepToolAsk, StepToolFind or StepToolCall
	State  string // pending | done | failed
	Agent  string // ask: the agent asked, by name (its id if it has none); call: the tool
	Host   string // ask: the node hosting it ("node b3c4d5", "this node"); call: the server; "" unknown
	Text   string // the question, the search, or the tool's arguments
	Result string // the reply, the search's outcome, or why it failed
}

// NewChatStep is the line for s; false for a step of a tool the page does
// not know, which the page shows as a plain "step" line.
func NewChatStep(s agent.Step) (ChatStep, bool) {
	if s.Tool != StepToolAsk && s.Tool != StepToolFind && s.Tool != StepToolCall {
		return ChatStep{}, false
	}
	c := ChatStep{Tool: s.Tool, State: stepPending, Agent: s.AgentName, Host: s.Host, Text: s.Text, Result: s.Reply}
	if c.Agent == "" {
		c.Agent = s.AgentID
	}
	if s.Tool == StepToolCall {
		c.Agent, c.Host = s.Name, s.Server
	}
	switch {
	case s.Done && s.Error != "":
		c.State, c.Result = stepFailed, s.Error
	case s.Done:
		c.State = stepDone
	}
	return c, true
}

// stepTemplates are the empty lines chat.js clones for step frames, one
// per tool and state, named "step-{tool}-{state}".
func stepTemplates() []ChatStep {
	var out []ChatStep
	for _, tool := range []string{StepToolAsk, StepToolFind, StepToolCall} {
		for _, state := range []string{stepPending, stepDone, stepFailed} {
			out = append(out, ChatStep{Tool: tool, State: state})
		}
	}
	return out
}

func stepTemplateName(s ChatStep) string { return "step-" + s.Tool + "-" + s.State }

// stepVerb leads a step's summary.
func stepVerb(s ChatStep) string {
	switch {
	case s.Tool == StepToolAsk && s.State == stepPending:
		return "asking"
	case s.Tool == StepToolAsk:
		return "asked"
	case s.Tool == StepToolCall && s.State == stepPending:
		return "calling"
	case s.Tool == StepToolCall:
		return "called"
	case s.State == stepPending:
		return "searching the catalogue"
	default:
		return "searched the catalogue"
	}
}

// stepLabels name the question and the result inside an opened step.
func stepLabels(s ChatStep) (question, result string) {
	question, result = "Question", "Reply"
	switch s.Tool {
	case StepToolFind:
		question, result = "Search", "Found"
	case StepToolCall:
		question, result = "Arguments", "Result"
	}
	if s.State == stepFailed {
		result = "Error"
	}
	return question, result
}
