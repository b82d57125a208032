package portal_test

import (
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestRegisterLLMTools: the register form takes an llm agent's tool
// servers one a line; a bad line is an error on its line; the secret
// typed after a header is stored, never rendered back (form, edit form,
// agent page, API), and a header left empty on edit keeps it.
func TestRegisterLLMTools(t *testing.T) {
	const secret = "tool-secret-77f1"
	calc := strings.Repeat("b", agent.IDLen)
	e := New(t)
	e.Signup("alice", "password-alice")
	llm := func(tools string) []string {
		return []string{"backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_model", "gpt-x", "backend_tools", tools}
	}
	noSecret := func(t *testing.T, resp *http.Response) *http.Response {
		t.Helper()
		body, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(body), secret) {
			t.Fatalf("%s renders the tool secret", resp.Request.URL.Path)
		}
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		return resp
	}

	// A bad line: its error names the line; the secret is not kept.
	resp := noSecret(t, e.PostForm("/register", RegisterForm(llm("https://tools.example.com/mcp X-Api-Key: "+secret+"\nnot-an-agent")...)))
	doc := ParsePage(t, resp, http.StatusUnprocessableEntity)
	if got := Text(MustTestid(t, doc, "error-backend.tools")); !strings.Contains(got, "line 2") || !strings.Contains(got, "agent id") {
		t.Errorf("tools error = %q", got)
	}
	MustTestid(t, doc, "tool-secret-dropped")
	if got := MustTestid(t, doc, "backend-tools").Text(); got != "https://tools.example.com/mcp X-Api-Key:\nnot-an-agent" {
		t.Errorf("tools kept as %q", got)
	}

	// Saved: both servers, the secret stored with its header.
	resp = e.PostForm("/register", RegisterForm(llm("https://tools.example.com/mcp X-Api-Key: "+secret+"\n\n"+calc+" allow=send_message")...))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	b, err := e.Store.GetBackend(t.Context(), id)
	want := []agent.ToolServer{{URL: "https://tools.example.com/mcp", Header: "X-Api-Key", Secret: secret}, {Agent: calc, Allow: []string{"send_message"}}}
	if err != nil || !reflect.DeepEqual(b.Tools, want) {
		t.Fatalf("stored tools %v, %v", b.Tools, err)
	}

	// Shown nowhere; the edit form shows the header with nothing after it.
	editPath := "/account/agents/" + id + "/edit"
	doc = ParsePage(t, noSecret(t, e.Do(http.MethodGet, editPath, nil)), http.StatusOK)
	text := MustTestid(t, doc, "backend-tools").Text()
	if text != "https://tools.example.com/mcp X-Api-Key:\n"+calc+" allow=send_message" {
		t.Errorf("edit form tools %q", text)
	}
	noSecret(t, e.Do(http.MethodGet, "/agents/"+id, nil))
	noSecret(t, e.Do(http.MethodGet, "/api/v1/agents/"+id, nil))

	// Saved as shown: the secret is kept.
	resp = e.PostForm(editPath, RegisterForm(llm(text)...))
	WantStatus(t, resp, http.StatusSeeOther)
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || len(b.Tools) != 2 || b.Tools[0].Secret != secret {
		t.Fatalf("tools after edit %v, %v", b.Tools, err)
	}
}
