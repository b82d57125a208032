package portal_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

func TestRegisterForm(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")

	doc := e.Page("/register", http.StatusOK)
	form := MustTestid(t, doc, "agent-form")
	if form.AttrOr("action", "") != "/register" || form.AttrOr("method", "") != "post" {
		t.Error("register form does not POST to /register")
	}
	if got := MustTestid(t, doc, "skill-rows").Find("[name=skill_id]").Length(); got != 1 {
		t.Errorf("%d skill blocks, want one (more come with Add skill)", got)
	}

	tests := []struct {
		name   string
		form   []string // overrides of registerForm
		errors []string // error-<key> testids
		keep   map[string]string
	}{
		{"bad name and tags", []string{"name", "Bad Name!", "tags", "ok, Bad Tag, ok"}, []string{"name", "tags"},
			map[string]string{"name": "Bad Name!", "tags": "ok, Bad Tag, ok", "display_name": "Form Bot"}},
		{"missing display name", []string{"display_name", " "}, []string{"display_name"}, nil},
		{"blank hangul filler display name", []string{"display_name", "\u3164"}, []string{"display_name"}, nil},
		{"display name hiding a zero-width space", []string{"display_name", "Pay\u200bpal"}, []string{"display_name"}, nil},
		{"bad skill id", []string{"skill_id", "Not OK"}, []string{"skills[0].id"}, map[string]string{"skill_id": "Not OK"}},
		{"private webhook", []string{"backend_kind", "webhook", "backend_url", "http://127.0.0.1/hook"}, []string{"backend.url"},
			map[string]string{"backend_url": "http://127.0.0.1/hook"}},
		{"llm without model", []string{"backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_api_key", "sk-secret-123"},
			[]string{"backend.model"}, map[string]string{"backend_url": "https://api.example.com/v1"}},
		{"mcp without tool", []string{"backend_kind", "mcp", "backend_url", "ftp://x"}, []string{"backend.url", "backend.tool"}, nil},
		{"unknown kind", []string{"backend_kind", "magic"}, []string{"backend.kind"}, nil},
		{"long description", []string{"description", strings.Repeat("x", agent.MaxDescriptionBytes+1)}, []string{"description"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.PostForm("/register", RegisterForm(tt.form...))
			body, _ := io.ReadAll(resp.Body)
			if strings.Contains(string(body), "sk-secret-123") {
				t.Fatal("the API key is rendered back")
			}
			resp.Body = io.NopCloser(strings.NewReader(string(body)))
			doc := ParsePage(t, resp, http.StatusUnprocessableEntity)
			MustTestid(t, doc, "form-error")
			for _, k := range tt.errors {
				MustTestid(t, doc, "error-"+k)
			}
			for name, want := range tt.keep {
				if got, _ := InputValue(doc, name); got != want {
					t.Errorf("%s kept as %q, want %q", name, got, want)
				}
			}
			if got := doc.Find("textarea[name=description]").Text(); !strings.HasPrefix(got, strings.TrimSpace(RegisterForm(tt.form...).Get("description"))[:10]) {
				t.Errorf("description not kept: %.40q", got)
			}
			if got := doc.Find("#backend-kind option[selected]").AttrOr("value", ""); got != RegisterForm(tt.form...).Get("backend_kind") && tt.name != "unknown kind" {
				t.Errorf("backend kind kept as %q", got)
			}
			if _, ok := doc.Find("input[name=backend_api_key]").Attr("value"); ok {
				t.Error("api key input has a value")
			}
			if tt.name == "llm without model" {
				MustTestid(t, doc, "api-key-dropped")
			}
		})
	}

	// The skill blocks close up: an error in the second filled block is
	// shown on the second block.
	f := RegisterForm()
	f["skill_id"] = []string{"", "ok", "Bad!"}
	f["skill_name"] = []string{"", "OK", "Bad"}
	f["skill_description"] = []string{"", "", ""}
	f["skill_examples"] = []string{"", "", ""}
	doc = ParsePage(t, e.PostForm("/register", f), http.StatusUnprocessableEntity)
	if got := MustTestid(t, doc, "error-skills[1].id"); got.Closest("fieldset").Find("[name=skill_id]").AttrOr("value", "") != "Bad!" {
		t.Error("skill error is not next to its block")
	}

	// Success: 303 to the agent, flash, every field stored.
	resp := e.PostForm("/register", RegisterForm())
	WantStatus(t, resp, http.StatusSeeOther)
	loc := Location(t, resp)
	id := strings.TrimPrefix(loc, "/agents/")
	if !agent.ValidID(id) {
		t.Fatalf("redirect to %q", loc)
	}
	doc = e.Page(loc, http.StatusOK)
	if got := Text(MustTestid(t, doc, "flash")); !strings.Contains(got, "Form Bot") {
		t.Errorf("flash = %q", got)
	}
	MustTestid(t, doc, "edit-agent")
	l, err := e.Store.GetAgent(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	r := l.Record
	if r.Owner != "alice" || r.Name != "form-bot" || strings.Join(r.Tags, ",") != "form,test" || len(r.Skills) != 1 ||
		strings.Join(r.Skills[0].Examples, "|") != "hello|hi there" || r.Version != "1.0.0" {
		t.Errorf("stored record = %+v", r)
	}

	// The same name again is a field error, not a 500.
	doc = ParsePage(t, e.PostForm("/register", RegisterForm()), http.StatusUnprocessableEntity)
	if got := Text(MustTestid(t, doc, "error-name")); !strings.Contains(got, "already registered") {
		t.Errorf("duplicate name error = %q", got)
	}
}

func TestEditAndDeleteOwnAgent(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	resp := e.PostForm("/register", RegisterForm(
		"backend_kind", "llm", "backend_url", "https://api.example.com/v1",
		"backend_model", "gpt-x", "backend_system_prompt", "Be brief.", "backend_api_key", "sk-keep-me",
	))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	editPath := "/account/agents/" + id + "/edit"

	// The edit form is prefilled, without the key.
	resp = e.Do(http.MethodGet, editPath, nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "sk-keep-me") {
		t.Fatal("edit form renders the API key")
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	doc := ParsePage(t, resp, http.StatusOK)
	for name, want := range map[string]string{"name": "form-bot", "display_name": "Form Bot", "tags": "form, test", "skill_id": "greet", "backend_url": "https://api.example.com/v1", "backend_model": "gpt-x"} {
		if got, _ := InputValue(doc, name); got != want {
			t.Errorf("prefilled %s = %q, want %q", name, got, want)
		}
	}
	if _, ro := doc.Find("input[name=name]").Attr("readonly"); !ro {
		t.Error("name is editable")
	}
	if got := doc.Find("textarea[name=skill_examples]").First().Text(); got != "hello\nhi there" {
		t.Errorf("examples = %q", got)
	}
	MustTestid(t, doc, "api-key-stored")
	if got := MustTestid(t, doc, "agent-form").AttrOr("action", ""); got != editPath {
		t.Errorf("edit form action = %q", got)
	}

	// An invalid edit re-renders with the message and the stored-key note.
	doc = ParsePage(t, e.PostForm(editPath, RegisterForm("backend_kind", "llm", "backend_url", "https://api.example.com/v1", "display_name", "")), http.StatusUnprocessableEntity)
	MustTestid(t, doc, "error-display_name")
	MustTestid(t, doc, "error-backend.model")
	MustTestid(t, doc, "api-key-stored")

	// Save with a blank key: the key is kept; a posted name change is ignored.
	before, _ := e.Store.GetAgent(t.Context(), id)
	resp = e.PostForm(editPath, RegisterForm("name", "renamed", "display_name", "Form Bot 2",
		"backend_kind", "llm", "backend_url", "https://api.example.com/v2", "backend_model", "gpt-y"))
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != "/agents/"+id {
		t.Errorf("after edit: %q", got)
	}
	after, _ := e.Store.GetAgent(t.Context(), id)
	if after.Record.DisplayName != "Form Bot 2" || after.Record.Seq <= before.Record.Seq || after.Record.Name != "form-bot" {
		t.Errorf("after edit: %+v", after.Record)
	}
	b, err := e.Store.GetBackend(t.Context(), id)
	if err != nil || b.APIKey != "sk-keep-me" || b.Model != "gpt-y" || b.URL != "https://api.example.com/v2" {
		t.Errorf("backend after edit = %v, %v", b, err)
	}

	// The account lists it; delete from there.
	doc = e.Page("/account", http.StatusOK)
	row := MustTestid(t, doc, "account-agent")
	if row.AttrOr("data-agent-id", "") != id {
		t.Errorf("account lists %q", row.AttrOr("data-agent-id", ""))
	}
	resp = e.PostForm("/account/agents/"+id+"/delete", nil)
	WantStatus(t, resp, http.StatusSeeOther)
	if got := Location(t, resp); got != "/account" {
		t.Errorf("after delete: %q", got)
	}
	doc = e.Page("/account", http.StatusOK)
	MustTestid(t, doc, "account-empty")
	if got := Text(MustTestid(t, doc, "flash")); !strings.Contains(got, "Deleted") {
		t.Errorf("flash = %q", got)
	}
	e.Page("/agents/"+id, http.StatusGone)
	e.Page(editPath, http.StatusNotFound)
	ParsePage(t, e.PostForm("/account/agents/"+id+"/delete", nil), http.StatusNotFound)
}

func TestCannotManageOthersAgents(t *testing.T) {
	e := New(t)
	id := e.SeedAgent("alice", SimpleInput("alices-bot", "Alice's Bot")).Record.ID
	opID := e.SeedAgent("", SimpleInput("operator-bot", "Operator Bot")).Record.ID
	e.Signup("mallory", "password-mallory")
	for _, target := range []string{id, opID} {
		e.Page("/account/agents/"+target+"/edit", http.StatusForbidden)
		ParsePage(t, e.PostForm("/account/agents/"+target+"/edit", RegisterForm("name", "alices-bot", "display_name", "Pwned")), http.StatusForbidden)
		ParsePage(t, e.PostForm("/account/agents/"+target+"/delete", nil), http.StatusForbidden)
	}
	l, _ := e.Store.GetAgent(t.Context(), id)
	if l.Record.DisplayName != "Alice's Bot" || l.Record.Tombstone {
		t.Errorf("another user changed the agent: %+v", l.Record)
	}
	// Unknown and malformed ids are 404s, not 403s or 500s.
	e.Page("/account/agents/"+strings.Repeat("b", 52)+"/edit", http.StatusNotFound)
	ParsePage(t, e.PostForm("/account/agents/nope/delete", nil), http.StatusNotFound)
}
