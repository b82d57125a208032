package portal_test

import (
	"net/http"
	"testing"

	"github.com/PuerkitoBio/goquery"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestAddSkillWithoutJS: "Add skill" is a submit button (action=add-skill);
// the server answers with the form again, one more skill block, every
// typed value kept (blank blocks in place), nothing saved; the new block's
// first field takes the focus. The form's default button (Enter) saves.
func TestAddSkillWithoutJS(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")

	doc := e.Page("/register", http.StatusOK)
	btn := MustTestid(t, doc, "add-skill")
	if btn.AttrOr("type", "") != "submit" || btn.AttrOr("name", "") != "action" || btn.AttrOr("value", "") != "add-skill" {
		t.Fatalf("add-skill button is not a submit button action=add-skill")
	}
	if doc.Find(`template[data-skill-template]`).Length() != 1 {
		t.Error("no skill block template for app.js")
	}
	first := MustTestid(t, doc, "agent-form").Find(`button[type=submit]`).First()
	if first.AttrOr("name", "") != "" || first.AttrOr("value", "") != "" {
		t.Error("the form's first submit button (its default, Enter) is not a plain save")
	}

	f := RegisterForm("skill_id", "greet", "skill_name", "Greet", "skill_description", "", "skill_examples", "hello\nhi", "display_name", "Typed Name", "action", "add-skill")
	doc = ParsePage(t, e.PostForm("/register", f), http.StatusOK)
	rows := MustTestid(t, doc, "skill-rows").Find(`[data-testid="skill-row"]`)
	if rows.Length() != 2 {
		t.Fatalf("%d skill blocks after Add skill, want 2", rows.Length())
	}
	if v := rows.First().Find("[name=skill_id]").AttrOr("value", ""); v != "greet" {
		t.Errorf("typed skill id became %q", v)
	}
	if v := rows.First().Find("textarea[name=skill_examples]").Text(); v != "hello\nhi" {
		t.Errorf("typed examples became %q", v)
	}
	if v, _ := InputValue(doc, "display_name"); v != "Typed Name" {
		t.Errorf("display name became %q", v)
	}
	if _, ok := rows.Last().Find("[name=skill_id]").Attr("autofocus"); !ok {
		t.Error("the new block's first field has no autofocus")
	}
	if id := rows.Last().Find("[name=skill_id]").AttrOr("id", ""); id != "skill-1-id" {
		t.Errorf("new block's id field is #%s", id)
	}
	if Testid(doc, "form-error").Length() != 0 || doc.Find(".field-error").Length() != 0 {
		t.Error("Add skill shows errors")
	}
	// Blank blocks stay where they are: add twice more from two blocks.
	f = RegisterForm("action", "add-skill")
	f["skill_id"] = []string{"", "second"}
	f["skill_name"] = []string{"", "Second"}
	f["skill_description"] = []string{"", ""}
	f["skill_examples"] = []string{"", ""}
	doc = ParsePage(t, e.PostForm("/register", f), http.StatusOK)
	var ids []string
	MustTestid(t, doc, "skill-rows").Find("[name=skill_id]").Each(func(_ int, s *goquery.Selection) { ids = append(ids, s.AttrOr("value", "")) })
	if len(ids) != 3 || ids[0] != "" || ids[1] != "second" || ids[2] != "" {
		t.Errorf("skill ids after adding to a blank and a filled block: %q", ids)
	}
	// Nothing was saved.
	page, err := e.Store.SearchAgents(t.Context(), SearchAll())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(page.Listings); n != 0 {
		t.Errorf("Add skill saved the agent (%d listings)", n)
	}
}
