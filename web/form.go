package web

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// backendKinds are the choices of the backend select, in display order.
var backendKinds = []Option{
	{Value: agent.BackendBuiltin, Label: "Built-in (runs on this node)"},
	{Value: agent.BackendLLM, Label: "LLM (OpenAI-compatible API)"},
	{Value: agent.BackendMCP, Label: "MCP server tool"},
	{Value: agent.BackendWebhook, Label: "Webhook (POST JSON)"},
	{Value: agent.BackendA2A, Label: "A2A agent (by its agent card)"},
}

var backendFields = map[string]bool{
	"backend.kind": true, "backend.builtin": true, "backend.url": true, "backend.model": true,
	"backend.system_prompt": true, "backend.api_key": true, "backend.tool": true, "backend.delegate": true,
}

// delegateHelp says what the "May call other agents" box allows, with the
// limits the runtime keeps to.
func delegateHelp() string {
	return fmt.Sprintf("The model gets two tools: find_agents searches the catalogue and ask_agent sends a message to any agent on the network. "+
		"Limits: %d calls a turn, %d hops deep, no agent twice in one chain.", agent.MaxDelegations, agent.MaxHops)
}

// toolsHelp says what the tools field takes, with the runtime's bounds.
func toolsHelp() string {
	return fmt.Sprintf("One a line: an MCP server's URL (Streamable HTTP), optionally followed by a header and its secret "+
		"(https://tools.example.com/mcp X-Api-Key: sk-…; a bare token after Authorization: is sent as a bearer token), or an agent's id. "+
		"The model is offered every tool of each server. A tool that is not read-only, and an agent, "+
		"run only once the person chatting approves each call, unless the line ends with allow=tool_a,tool_b (or allow=* for all). "+
		"Secrets are stored on this node only and never shown again: "+
		"a header left empty keeps the stored one. At most %d servers.", agent.MaxToolServers)
}

// shown reports whether the form displays the error of key next to a field.
func (f AgentFormView) shown(key string) bool {
	base, _, _ := strings.Cut(key, "[")
	switch base {
	case "name", "display_name", "description", "tags", "version":
		return base == key || base == "tags"
	case "skills":
		var i int
		var field string
		if n, _ := fmt.Sscanf(key, "skills[%d].%s", &i, &field); n != 2 || i < 0 || i >= len(f.Skills) {
			return false
		}
		field, _, _ = strings.Cut(field, "[")
		return field == "id" || field == "name" || field == "description" || field == "examples"
	case "backend.tools":
		return true // shown by line under the tools field
	}
	return backendFields[key]
}

// OtherErrors are the messages not shown next to a field (for example
// "skills": too many, or "record": too large once encoded), for the summary
// at the top of the form.
func (f AgentFormView) OtherErrors() []string {
	var out []string
	for k, m := range f.Errors {
		if !f.shown(k) {
			out = append(out, k+": "+m)
		}
	}
	sort.Strings(out)
	return out
}

func (f AgentFormView) err(key string) string { return fieldErr(f.Errors, key) }

func skillKey(i int, field string) string {
	if i < 0 {
		return "skills[" + skillSlot + "]." + field
	}
	return fmt.Sprintf("skills[%d].%s", i, field)
}

// skillSlot stands for the index in the <template> of a skill block
// (index -1); app.js replaces it with the new block's index.
const skillSlot = "__i__"

// skillLegend is a skill block's legend ("Skill 2"); the template's says
// "Skill __n__", for app.js to number.
func skillLegend(i int) string {
	if i < 0 {
		return "Skill __n__"
	}
	return "Skill " + strconv.Itoa(i+1)
}

// canAddSkill says whether the form has room for another skill block.
func canAddSkill(v AgentFormView) bool { return len(v.Skills) < agent.MaxSkills }

// maxSkillsText is agent.MaxSkills for the data-max attribute.
func maxSkillsText() string { return strconv.Itoa(agent.MaxSkills) }

// skillInput is the form field name of a skill row's field.
func skillInput(field string) string { return "skill_" + field }

func kindOptions(selected string) []Option {
	out := make([]Option, len(backendKinds))
	for i, o := range backendKinds {
		o.Selected = o.Value == selected
		out[i] = o
	}
	return out
}

func builtinOptions(selected string) []Option {
	out := make([]Option, len(agent.Builtins))
	for i, b := range agent.Builtins {
		out[i] = Option{Value: b, Label: b, Selected: b == selected}
	}
	return out
}

// inputName maps an error key to its form field name ("backend.url" →
// "backend_url").
func inputName(key string) string { return strings.ReplaceAll(key, ".", "_") }

func skillDOMID(i int, field string) string {
	if i < 0 {
		return "skill-" + skillSlot + "-" + field
	}
	return fmt.Sprintf("skill-%d-%s", i, field)
}

func nameHelp(edit bool) string {
	if edit {
		return "The name is part of the agent's id and cannot change."
	}
	return "3–64 characters: a–z, 0–9 and hyphens. Part of the agent's id; it cannot change later."
}

// firstOnly keeps a placeholder on the first skill block only, so the
// example does not repeat down the form.
func firstOnly(i int, placeholder string) string {
	if i == 0 {
		return placeholder
	}
	return ""
}
