package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
)

// demoPlannerModel is the model name the demo's planner agent shows: it
// says on every screen that no real language model is behind it.
const demoPlannerModel = "demo-planner (scripted)"

// demoPlanner is the script of the demo's planner agent: a deterministic
// stand-in for a language model that calls tools the way a real one
// would, so the demo shows three nodes working on one question without an
// API key. For a question it (1) searches the catalogue for a calculator,
// (2) asks one on another node the arithmetic in the question, (3) asks
// the haiku agent for a poem about the result, then answers with both.
// Each step reads the tool results so far from the request, as a model
// would: the script keeps no state between requests.
type demoPlanner struct {
	// PreferCalc is the calculator to ask when find_agents lists it; ""
	// or absent: the first one another node hosts.
	PreferCalc string
	// HaikuID is the haiku agent to ask; "" skips the poem.
	HaikuID string
	// HaikuWhere says where the haiku agent is, for the answer ("node-c").
	HaikuWhere string
	// Hosts names nodes for people in the answer: find_agents' host
	// ("node 3f9a2c") → the demo's name ("node-b"); may be nil.
	Hosts map[string]string
	// Pause is the demo's pause before each step (pausing), said in the
	// answer so nobody takes it for the planet's speed; 0 says nothing.
	Pause time.Duration
}

// demoArithmetic matches a run of arithmetic in a question.
var demoArithmetic = regexp.MustCompile(`[-+*/%^().\d\s]*\d[-+*/%^().\d\s]*`)

// demoDefaultSum is asked when the question has no arithmetic.
const demoDefaultSum = "6*7"

// demoExpression is the first run of arithmetic in question that has an
// operator, or demoDefaultSum.
func demoExpression(question string) string {
	for _, m := range demoArithmetic.FindAllString(question, -1) {
		m = strings.TrimRight(strings.TrimSpace(m), ". ")
		if strings.ContainsAny(m, "+-*/%^") {
			return m
		}
	}
	return demoDefaultSum
}

// Reply is the planner's fakellm.Script. "note <text>" uses the demo's
// notebook tool server (fakenotes.Script), whose save waits for approval.
func (p demoPlanner) Reply(req fakellm.Request) fakellm.Reply {
	if strings.HasPrefix(strings.TrimSpace(req.LastUser()), "note ") {
		return fakenotes.Script(req)
	}
	results := req.ToolResults() // this turn's: history carries no tool messages
	if len(results) == 0 {
		return fakellm.Reply{Calls: []fakellm.ToolCall{
			fakellm.Call("find-1", runtime.ToolFindAgents, map[string]string{"query": "calculator"}),
		}}
	}
	calc, ok := p.pickCalculator(results[0])
	if !ok {
		return fakellm.Reply{Text: "I searched the planet for a calculator on another node and found none, so I cannot work this out. " + p.disclaimer()}
	}
	sum := demoExpression(req.LastUser())
	if len(results) == 1 {
		return fakellm.Reply{Calls: []fakellm.ToolCall{
			fakellm.Call("ask-1", runtime.ToolAskAgent, map[string]string{"agent_id": calc.ID, "text": sum}),
		}}
	}
	calcWhere := calc.Name + " on " + p.hostName(calc.Host)
	result, err := toolReply(results[1])
	if err != "" {
		return fakellm.Reply{Text: fmt.Sprintf("I asked the %s to work out %s, but it could not answer: %s %s", calcWhere, sum, err, p.disclaimer())}
	}
	if p.HaikuID == "" {
		return fakellm.Reply{Text: fmt.Sprintf("The %s says %s = %s. %s", calcWhere, sum, result, p.disclaimer())}
	}
	if len(results) == 2 {
		// The builtin haiku agent writes about the whole message it is
		// sent, so it gets the result alone.
		return fakellm.Reply{Calls: []fakellm.ToolCall{
			fakellm.Call("ask-2", runtime.ToolAskAgent, map[string]string{"agent_id": p.HaikuID, "text": result}),
		}}
	}
	haiku, err := toolReply(results[2])
	if err != "" {
		haiku = "(it could not answer: " + err + ")"
	}
	return fakellm.Reply{Text: fmt.Sprintf("I searched the planet for a calculator and asked the %s: %s = %s.\n\n"+
		"Then I asked the haiku agent on %s for a poem about %s:\n\n%s\n\n%s",
		calcWhere, sum, result, p.HaikuWhere, result, haiku, p.disclaimer())}
}

// demoDisclaimer ends every answer of the planner.
const demoDisclaimer = "(I am a scripted demo model, not a real LLM: I plan every question the same way.)"

// disclaimer is demoDisclaimer, with the demo's pause per step when there
// is one.
func (p demoPlanner) disclaimer() string {
	if p.Pause <= 0 {
		return demoDisclaimer
	}
	return strings.TrimSuffix(demoDisclaimer, ".)") + fmt.Sprintf(", and I wait %s before each step so you can watch the steps arrive.)", p.Pause)
}

// pickCalculator reads a find_agents result: the preferred calculator if
// listed, else the first one another node hosts.
func (p demoPlanner) pickCalculator(result string) (runtime.FoundAgent, bool) {
	var found struct {
		Agents []runtime.FoundAgent `json:"agents"`
	}
	if json.Unmarshal([]byte(result), &found) != nil {
		return runtime.FoundAgent{}, false
	}
	var pick runtime.FoundAgent
	for _, a := range found.Agents {
		if a.Host == "this node" || !strings.Contains(strings.ToLower(a.Name), "calculator") {
			continue
		}
		if a.ID == p.PreferCalc {
			return a, true
		}
		if pick.ID == "" {
			pick = a
		}
	}
	return pick, pick.ID != ""
}

func (p demoPlanner) hostName(host string) string {
	if name := p.Hosts[host]; name != "" {
		return name
	}
	return host
}

// toolReply reads an ask_agent result: the reply, or the error the
// runtime reported.
func toolReply(result string) (reply, errText string) {
	var r struct {
		Reply string `json:"reply"`
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(result), &r) != nil {
		return "", "its answer was unreadable"
	}
	if r.Error != "" {
		return "", r.Error
	}
	return strings.TrimSpace(r.Reply), ""
}
