package portal

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// actionAddSkill is the value of the form's "Add skill" submit button
// (name=action): without JavaScript it re-renders the form with one more
// skill block, every typed value kept; app.js adds the block in place.
const actionAddSkill = "add-skill"

// addSkillRow is the view after "Add skill": the posted skill blocks as
// they were (blank ones too, in place) and one blank more, up to
// agent.MaxSkills.
func addSkillRow(f url.Values, v web.AgentFormView) web.AgentFormView {
	ids, names, descs, exs := f["skill_id"], f["skill_name"], f["skill_description"], f["skill_examples"]
	rows := min(max(len(ids), len(names), len(descs), len(exs)), agent.MaxSkills)
	v.Skills = make([]web.SkillRow, 0, rows+1)
	for i := range rows {
		v.Skills = append(v.Skills, web.SkillRow{ID: at(ids, i), Name: at(names, i), Description: at(descs, i), Examples: at(exs, i)})
	}
	if len(v.Skills) < agent.MaxSkills {
		v.Skills = append(v.Skills, web.SkillRow{})
	}
	v.FocusSkill = len(v.Skills) - 1
	return v
}

// parseAgentForm reads the register/edit form into the input saveAgent
// takes and the view that re-renders it after an error. Blank skill blocks
// are dropped and the rest closed up, so the index in an error key
// ("skills[1].id") is the index of the block shown. Only the settings of
// the chosen backend kind are kept in the input.
func parseAgentForm(f url.Values) (registry.Input, web.AgentFormView) {
	in := registry.Input{
		Name:        f.Get("name"),
		DisplayName: f.Get("display_name"),
		Description: f.Get("description"),
		Tags:        strings.Split(f.Get("tags"), ","),
		Version:     f.Get("version"),
	}
	v := web.AgentFormView{
		Name:        in.Name,
		DisplayName: in.DisplayName,
		Description: in.Description,
		Tags:        f.Get("tags"),
		Version:     in.Version,
	}
	ids, names, descs, exs := f["skill_id"], f["skill_name"], f["skill_description"], f["skill_examples"]
	rows := min(max(len(ids), len(names), len(descs), len(exs)), 2*agent.MaxSkills)
	for i := range rows {
		row := web.SkillRow{ID: at(ids, i), Name: at(names, i), Description: at(descs, i), Examples: at(exs, i)}
		if strings.TrimSpace(row.ID+row.Name+row.Description+row.Examples) == "" {
			continue
		}
		if strings.TrimSpace(row.ID) == "" {
			// A skill id left empty is made from its name, as the form
			// does as you type (app.js), so the row shows what was used.
			row.ID = skillIDFrom(row.Name)
		}
		v.Skills = append(v.Skills, row)
		in.Skills = append(in.Skills, agent.Skill{
			ID:          strings.ToLower(strings.TrimSpace(row.ID)),
			Name:        strings.TrimSpace(row.Name),
			Description: strings.TrimSpace(row.Description),
			Examples:    lines(row.Examples),
		})
	}
	v.Skills = padSkillRows(v.Skills)

	v.Backend = web.BackendForm{
		Kind:          f.Get("backend_kind"),
		Builtin:       f.Get("backend_builtin"),
		URL:           f.Get("backend_url"),
		Model:         f.Get("backend_model"),
		SystemPrompt:  f.Get("backend_system_prompt"),
		Tool:          f.Get("backend_tool"),
		Delegate:      f.Get("backend_delegate") != "",
		Concurrency:   strings.TrimSpace(f.Get("backend_concurrency")),
		Memory:        f.Get("backend_memory") != "",
		HistoryTokens: strings.TrimSpace(f.Get("backend_history_tokens")),
		KeyDropped:    f.Get("backend_api_key") != "" || f.Get("backend_a2a_key") != "",
	}
	b := agent.Backend{Kind: v.Backend.Kind}
	switch b.Kind {
	case agent.BackendBuiltin:
		b.Builtin = v.Backend.Builtin
	case agent.BackendLLM:
		b.URL = v.Backend.URL
		b.Model = strings.TrimSpace(v.Backend.Model)
		b.SystemPrompt = strings.TrimSpace(strings.ReplaceAll(v.Backend.SystemPrompt, "\r\n", "\n"))
		b.APIKey = strings.TrimSpace(f.Get("backend_api_key"))
		b.Delegate = v.Backend.Delegate
		b.Concurrency = formNumber(v.Backend.Concurrency)
		b.Memory = v.Backend.Memory
		b.HistoryTokens = formNumber(v.Backend.HistoryTokens)
		b.Tools, v.Backend.ToolSecretDropped = parseTools(f.Get("backend_tools"))
		v.Backend.Tools = toolsText(b.Tools)
	case agent.BackendMCP:
		b.URL = v.Backend.URL
		b.Tool = strings.TrimSpace(v.Backend.Tool)
	case agent.BackendWebhook:
		b.URL = v.Backend.URL
	case agent.BackendA2A:
		b.URL = v.Backend.URL
		b.APIKey = strings.TrimSpace(f.Get("backend_a2a_key"))
	}
	in.Backend = b
	return in, v
}

// agentFormFromListing prefills the edit form. The API key is never put in
// the form; the view only says whether one is stored.
func agentFormFromListing(l store.Listing, b agent.Backend) web.AgentFormView {
	r := l.Record
	v := web.AgentFormView{
		Edit:        true,
		ID:          r.ID,
		Action:      editAgentPath(r.ID),
		Name:        r.Name,
		DisplayName: r.DisplayName,
		Description: r.Description,
		Tags:        strings.Join(r.Tags, ", "),
		Version:     r.Version,
		Backend: web.BackendForm{
			Kind:          b.Kind,
			Builtin:       b.Builtin,
			URL:           b.URL,
			Model:         b.Model,
			SystemPrompt:  b.SystemPrompt,
			Tool:          b.Tool,
			Delegate:      b.Delegate,
			Concurrency:   numberText(b.Concurrency),
			Memory:        b.Memory,
			HistoryTokens: numberText(b.HistoryTokens),
			HasStoredKey:  b.APIKey != "",
			Tools:         toolsText(b.Tools),
		},
	}
	for _, s := range r.Skills {
		v.Skills = append(v.Skills, web.SkillRow{
			ID: s.ID, Name: s.Name, Description: s.Description, Examples: strings.Join(s.Examples, "\n"),
		})
	}
	v.Skills = padSkillRows(v.Skills)
	return v
}

// newAgentForm is the empty register form: a builtin echo agent, the
// quickest thing that works.
func newAgentForm() web.AgentFormView {
	return web.AgentFormView{
		Action:  "/register",
		Skills:  padSkillRows(nil),
		Backend: web.BackendForm{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
}

// padSkillRows gives a form without skills one blank block; more come
// one at a time with "Add skill".
func padSkillRows(rows []web.SkillRow) []web.SkillRow {
	if len(rows) == 0 {
		rows = append(rows, web.SkillRow{})
	}
	return rows
}

func editAgentPath(id string) string { return "/account/agents/" + id + "/edit" }

func at(ss []string, i int) string {
	if i < len(ss) {
		return ss[i]
	}
	return ""
}

// lines splits a textarea into its non-blank, trimmed lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// asTyped puts the tags of the tag errors back as the person typed them:
// the registry lower-cases and trims tags before it checks them, so
// "Web Search" is refused as "web search"; the form shows what was typed.
// typed is the form's comma-separated tags; the errors' indexes count its
// non-empty tags, as the registry's do.
func asTyped(errs map[string]string, typed string) map[string]string {
	var tags []string
	for _, t := range strings.Split(typed, ",") {
		if t = strings.TrimSpace(t); t != "" {
			tags = append(tags, t)
		}
	}
	for i, t := range tags {
		k := "tags[" + strconv.Itoa(i) + "]"
		if msg, ok := errs[k]; ok {
			errs[k] = strings.Replace(msg, strconv.Quote(strings.ToLower(t)), strconv.Quote(t), 1)
		}
	}
	return errs
}

// skillIDFrom makes a skill id from a skill name: lower-case a–z and 0–9,
// every other run of characters one hyphen, none at either end, at most
// agent.MaxNameLen characters ("Seven-Day Forecast!" → "seven-day-forecast").
// app.js's skillIdFrom does the same in the browser.
func skillIDFrom(name string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(r)
		default:
			hyphen = true
		}
		if b.Len() >= agent.MaxNameLen {
			break
		}
	}
	return strings.TrimRight(b.String()[:min(b.Len(), agent.MaxNameLen)], "-")
}

// formNumber reads a number field ("Requests at once", "History
// budget"): blank is 0 (the node's default); what is not a number is -1,
// which the backend's validation refuses with the range to use.
func formNumber(s string) int {
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// numberText is a number field's text for a stored backend.
func numberText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}
