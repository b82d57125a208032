package web

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	now := time.Date(2025, 1, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Time{}, "never"},
		{now.Add(time.Minute), "just now"},
		{now.Add(-10 * time.Second), "just now"},
		{now.Add(-50 * time.Second), "1 min ago"},
		{now.Add(-5 * time.Minute), "5 min ago"},
		{now.Add(-3 * time.Hour), "3 h ago"},
		{now.Add(-72 * time.Hour), "3 days ago"},
	}
	for _, tt := range tests {
		if got := Ago(tt.t, now); got != tt.want {
			t.Errorf("Ago(%v) = %q, want %q", now.Sub(tt.t), got, tt.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"  spaces\n\nand lines  ", 40, "spaces and lines"},
		{"one two three four", 12, "one two…"},
		{"éééééééééé", 4, "éééé…"},
	}
	for _, tt := range tests {
		if got := excerpt(tt.in, tt.n); got != tt.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestInitialsAndAvatar(t *testing.T) {
	for in, want := range map[string]string{"Weather Bot": "WB", "polyglot": "P", "<b>": "B", "": "?", "élan vital": "ÉV"} {
		if got := initials(in, ""); got != want {
			t.Errorf("initials(%q) = %q, want %q", in, got, want)
		}
	}
	if avatarClass("x") != avatarClass("x") || !strings.HasPrefix(avatarClass("x"), "avatar avatar-") {
		t.Error("avatar class is not stable")
	}
}

func TestFieldErrors(t *testing.T) {
	f := AgentFormView{
		Skills: make([]SkillRow, 2),
		Errors: map[string]string{
			"name":                  "bad name",
			"tags[1]":               `"X" is not a tag`,
			"tags[0]":               `"Y" is not a tag`,
			"skills[1].examples[2]": "too long",
			"skills[1].id":          "bad id",
			"skills[5].id":          "no such block",
			"skills":                "too many",
			"record":                "too large",
			"backend.url":           "bad url",
		},
	}
	checks := map[string]string{
		"name":               "bad name",
		"tags":               `"Y" is not a tag; "X" is not a tag`,
		"skills[1].examples": "line 3: too long",
		"skills[1].id":       "bad id",
		"backend.url":        "bad url",
		"version":            "",
	}
	for key, want := range checks {
		if got := f.err(key); got != want {
			t.Errorf("err(%q) = %q, want %q", key, got, want)
		}
	}
	got := strings.Join(f.OtherErrors(), " | ")
	if got != "record: too large | skills: too many | skills[5].id: no such block" {
		t.Errorf("OtherErrors = %q", got)
	}
}

// TestEscaping renders user text through the components: it must come out
// as text, never as markup.
func TestEscaping(t *testing.T) {
	evil := `<script>alert(1)</script>"'&`
	var b strings.Builder
	c := AgentCard{ID: "id", Name: "n", DisplayName: evil, Description: evil, Tags: []string{evil}, Status: "online"}
	if err := AgentCardView(c).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") {
		t.Fatalf("card renders markup: %s", b.String())
	}
}

func TestMixedScriptsText(t *testing.T) {
	cases := map[string][]string{
		"This name mixes Latin and Cyrillic letters, which can imitate another name.":        {"Latin", "Cyrillic"},
		"This name mixes Latin, Cyrillic and Greek letters, which can imitate another name.": {"Latin", "Cyrillic", "Greek"},
	}
	for want, scripts := range cases {
		if got := mixedScriptsText(scripts); got != want {
			t.Errorf("mixedScriptsText(%q) = %q, want %q", scripts, got, want)
		}
	}
}
