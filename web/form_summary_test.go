package web

import (
	"strings"
	"testing"
)

// TestErrorSummary: every error appears once, in the order of the fields
// on the page, linked to the field's id; errors no field shows come last,
// unlinked.
func TestErrorSummary(t *testing.T) {
	f := AgentFormView{
		Skills: make([]SkillRow, 3),
		Errors: map[string]string{
			"backend.api_key":       "bad key",
			"tags[3]":               "bad tag 3",
			"tags[1]":               "bad tag 1",
			"skills[1].examples[2]": "too long",
			"skills[0].name":        "is required",
			"name":                  "bad name",
			"record":                "too large",
		},
	}
	var got []string
	for _, l := range f.ErrorSummary() {
		got = append(got, l.Href+" "+l.Text())
	}
	want := []string{
		"#name Name: bad name",
		"#tags Tags: bad tag 1",
		"#tags Tags: bad tag 3",
		"#skill-0-name Skill 1 Name: is required",
		"#skill-1-examples Skill 2 Examples: too long",
		"#backend-api-key API key: bad key",
		" record: too large",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ErrorSummary:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
