package portal_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestRegisterFormRequired: required fields are marked for the eye and
// for assistive technology; optional ones are not.
func TestRegisterFormRequired(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	doc := e.Page("/register", http.StatusOK)
	MustTestid(t, doc, "required-note")
	for _, id := range []string{"name", "display_name", "backend-kind", "backend-url"} {
		el := doc.Find("#" + id)
		if _, ok := el.Attr("required"); !ok || el.AttrOr("aria-required", "") != "true" {
			t.Errorf("#%s is not marked required", id)
		}
		if doc.Find(`label[for="`+id+`"] .req`).Length() != 1 {
			t.Errorf("the label of #%s has no required mark", id)
		}
	}
	for _, id := range []string{"description", "tags", "version"} {
		if _, ok := doc.Find("#" + id).Attr("required"); ok {
			t.Errorf("optional #%s is marked required", id)
		}
	}
	// The description counter: wired for app.js, with a first value.
	ta := doc.Find("#description")
	if target := ta.AttrOr("data-count-target", ""); target != "#description-count" || ta.AttrOr("data-count-max", "") != "4096" {
		t.Errorf("description counter attributes: target %q max %q", target, ta.AttrOr("data-count-max", ""))
	}
	if got := Text(MustTestid(t, doc, "description-count")); got != "0 / 4096 bytes" {
		t.Errorf("description count = %q", got)
	}
}

// TestRegisterErrorSummary: the summary at the top lists each field in
// error, in form order, each linking to its field.
func TestRegisterErrorSummary(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	form := RegisterForm("name", "Bad Name", "display_name", "", "version", "not a version with spaces",
		"description", "héllo", "backend_kind", "webhook", "backend_url", "http://127.0.0.1:9/hook")
	doc := ParsePage(t, e.PostForm("/register", form), http.StatusUnprocessableEntity)
	if got := Text(MustTestid(t, doc, "description-count")); got != "6 / 4096 bytes" {
		t.Errorf("description count after an error = %q", got)
	}
	items := doc.Find(`[data-testid="error-summary-item"]`)
	var hrefs []string
	items.Each(func(_ int, li *goquery.Selection) {
		a := li.Find("a")
		href := a.AttrOr("href", "")
		hrefs = append(hrefs, href)
		if !strings.HasPrefix(href, "#") || doc.Find(href).Length() != 1 {
			t.Errorf("summary item %q links to %q, not a field", Text(li), href)
		}
		key := doc.Find(href).AttrOr("name", "")
		if msg := Text(doc.Find(`[data-testid="error-` + strings.ReplaceAll(key, "_", ".") + `"], [data-testid="error-` + key + `"]`)); msg == "" || !strings.HasSuffix(Text(a), msg) {
			t.Errorf("summary item %q does not give the field's message %q", Text(a), msg)
		}
	})
	want := []string{"#name", "#display_name", "#version", "#backend-url"}
	if strings.Join(hrefs, " ") != strings.Join(want, " ") {
		t.Errorf("summary links = %v, want %v", hrefs, want)
	}
	if got := Text(MustTestid(t, doc, "form-error").Find("h2")); got != "4 problems to fix" {
		t.Errorf("summary title = %q", got)
	}
	for _, s := range []string{"--", "allow-private"} {
		if strings.Contains(doc.Find("main").Text(), s) {
			t.Errorf("the page mentions %q", s)
		}
	}
	if !strings.Contains(doc.Text(), "this node does not allow private addresses for agent backends") {
		t.Error("the private backend refusal is not explained")
	}
}

// TestRegisterSkillIDDerived: a skill's ID and Name are marked required;
// an ID left empty is made from the skill's name (and kept in the form
// when something else is wrong); a block with neither says "is
// required", not the format rule. Fields in error show no placeholder:
// its example becomes a hint.
func TestRegisterSkillIDDerived(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	doc := e.Page("/register", http.StatusOK)
	for _, id := range []string{"skill-0-id", "skill-0-name"} {
		if doc.Find(`label[for="`+id+`"] .req`).Length() != 1 {
			t.Errorf("the label of #%s has no required mark", id)
		}
	}
	if doc.Find("#skill-0-id").Length() != 1 {
		t.Fatalf("no #skill-0-id in the form")
	}

	// Something else is wrong: the derived id comes back in the form.
	doc = ParsePage(t, e.PostForm("/register", RegisterForm("name", "", "skill_id", "", "skill_name", "Seven-Day Forecast!")), http.StatusUnprocessableEntity)
	if got := doc.Find("#skill-0-id").AttrOr("value", ""); got != "seven-day-forecast" {
		t.Errorf("derived skill id = %q, want seven-day-forecast", got)
	}
	if got := Text(MustTestid(t, doc, "error-name")); got != "is required" {
		t.Errorf("empty name: %q, want is required", got)
	}
	name := doc.Find("#name")
	if _, ok := name.Attr("placeholder"); ok {
		t.Errorf("the name in error keeps its placeholder %q", name.AttrOr("placeholder", ""))
	}
	if got := Text(name.Closest(".field").Find(`[data-testid="example-hint"]`)); got != "For example: weather-bot" {
		t.Errorf("name example hint = %q", got)
	}
	if _, ok := doc.Find("#display_name").Attr("placeholder"); !ok {
		t.Error("a field not in error lost its placeholder")
	}

	// A used block without ID nor name: both "is required".
	doc = ParsePage(t, e.PostForm("/register", RegisterForm("skill_id", "", "skill_name", "", "skill_description", "Says hello")), http.StatusUnprocessableEntity)
	for _, k := range []string{"skills[0].id", "skills[0].name"} {
		if got := Text(MustTestid(t, doc, "error-"+k)); got != "is required" {
			t.Errorf("%s: %q, want is required", k, got)
		}
	}
	if _, ok := doc.Find("#skill-0-id").Attr("placeholder"); ok {
		t.Error("the skill id in error keeps its placeholder")
	}

	// Success: the stored skill has the derived id.
	resp := e.PostForm("/register", RegisterForm("skill_id", "", "skill_name", "Seven-Day Forecast!"))
	WantStatus(t, resp, http.StatusSeeOther)
	doc = e.Page(Location(t, resp), http.StatusOK)
	if got := MustTestid(t, doc, "skill").AttrOr("data-skill-id", ""); got != "seven-day-forecast" {
		t.Errorf("stored skill id = %q", got)
	}
}
