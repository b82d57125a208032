package web

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentsite/agentsite/agent"
)

// ErrorLink is one entry of a form's error summary: the field's label and
// message, and Href ("#field-id") to jump to the field, or "" for an error
// no field shows (those keep their key as the label).
type ErrorLink struct {
	Href    string
	Label   string
	Message string
}

// Text is the entry as read: "Label: message".
func (l ErrorLink) Text() string { return l.Label + ": " + l.Message }

// listingFields are the listing's single fields in form order, with the
// DOM id of their input and their label.
var listingFields = []struct{ key, id, label string }{
	{"name", "name", "Name"},
	{"display_name", "display_name", "Display name"},
	{"description", "description", "Description"},
	{"tags", "tags", "Tags"},
	{"version", "version", "Version"},
}

// backendFieldOrder is the backend fields in form order, with their labels;
// the DOM id is "backend-" plus the field with hyphens.
var backendFieldOrder = []struct{ field, label string }{
	{"kind", "Backend kind"},
	{"builtin", "Built-in agent"},
	{"url", "URL"},
	{"model", "Model"},
	{"api_key", "API key"},
	{"system_prompt", "System prompt"},
	{"delegate", "May call other agents"},
	{"tool", "Tool"},
}

var skillFieldOrder = []struct{ field, label string }{
	{"id", "ID"}, {"name", "Name"}, {"description", "Description"}, {"examples", "Examples"},
}

// ErrorSummary lists every error of the form, in the order of the fields
// on the page, each linked to its field; errors no field shows (OtherErrors)
// come last, unlinked. The summary at the top of the form renders it.
func (f AgentFormView) ErrorSummary() []ErrorLink {
	type entry struct {
		rank int
		key  string
		link ErrorLink
	}
	var entries []entry
	for key, msg := range f.Errors {
		if !f.shown(key) {
			continue
		}
		rank, id, label := f.fieldRef(key)
		entries = append(entries, entry{rank, key, ErrorLink{Href: "#" + id, Label: label, Message: msg}})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].rank != entries[j].rank {
			return entries[i].rank < entries[j].rank
		}
		if a, b := elemIndex(entries[i].key, "tags"), elemIndex(entries[j].key, "tags"); a != b {
			return a < b
		}
		return entries[i].key < entries[j].key
	})
	out := make([]ErrorLink, 0, len(f.Errors))
	for _, e := range entries {
		out = append(out, e.link)
	}
	for _, m := range f.OtherErrors() {
		key, msg, _ := strings.Cut(m, ": ")
		out = append(out, ErrorLink{Label: key, Message: msg})
	}
	return out
}

// fieldRef places a shown error key: its rank in form order, the DOM id of
// its field and the field's label.
func (f AgentFormView) fieldRef(key string) (rank int, id, label string) {
	base, _, _ := strings.Cut(key, "[")
	for i, lf := range listingFields {
		if base == lf.key {
			return i, lf.id, lf.label
		}
	}
	if field, ok := strings.CutPrefix(key, "backend."); ok {
		for i, bf := range backendFieldOrder {
			if field == bf.field {
				return 10_000 + i, "backend-" + strings.ReplaceAll(field, "_", "-"), bf.label
			}
		}
	}
	var i int
	var field string
	_, _ = fmt.Sscanf(key, "skills[%d].%s", &i, &field) // shown has checked it parses
	field, _, _ = strings.Cut(field, "[")
	for j, sf := range skillFieldOrder {
		if field == sf.field {
			return 100 + i*len(skillFieldOrder) + j, skillDOMID(i, field), "Skill " + strconv.Itoa(i+1) + " " + sf.label
		}
	}
	return 20_000, "", key
}

// descriptionCount is the description counter's text, in bytes as the
// limit is (line breaks count once, as they are stored); app.js keeps it
// current while typing.
func descriptionCount(s string) string {
	return strconv.Itoa(descriptionBytes(s)) + " / " + strconv.Itoa(agent.MaxDescriptionBytes) + " bytes"
}

// descriptionOver reports whether the description is over its limit (the
// counter turns red).
func descriptionOver(s string) bool { return descriptionBytes(s) > agent.MaxDescriptionBytes }

// descriptionBytes is the description's size as stored (registry.Input
// normalizes it so).
func descriptionBytes(s string) int {
	return len(strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n")))
}

// field is a text input of the agent form.
type field struct {
	id, key, label, value, placeholder, help string
	readonly, required                       bool
}

// problemCount heads the error summary.
func problemCount(n int) string {
	return plural(n, "problem", "problems") + " to fix"
}
