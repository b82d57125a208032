package portal_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// healthEnv is a portal with agent health, private backends allowed, and
// alice logged in.
func healthEnv(t *testing.T) *Env {
	e := New(t)
	e.AllowPrivateEndpoints()
	UseHealth(e)
	e.Signup("alice", "password-alice")
	return e
}

// upWebhook is a webhook fake that answers its probe (OPTIONS) with 204.
func upWebhook(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook"
}

// testResult is the Test backend result in doc: its text and data-ok.
func testResult(t *testing.T, doc *goquery.Document) (text, ok string) {
	t.Helper()
	res := MustTestid(t, doc, "backend-test-result")
	return Text(res), res.AttrOr("data-ok", "")
}

// TestTestBackendButton: the register form's Test backend button probes
// the typed backend once, without saving, and shows the result inline: as
// an htmx fragment, or (no JavaScript) in the whole form again with every
// typed value kept.
func TestTestBackendButton(t *testing.T) {
	e := healthEnv(t)
	refused, hostPort := RefusingURL(t, "/hook")
	up := upWebhook(t)

	doc := e.Page("/register", http.StatusOK)
	btn := MustTestid(t, doc, "test-backend")
	if btn.AttrOr("name", "") != "test_backend" || btn.AttrOr("hx-post", "") != "/register" || btn.AttrOr("hx-target", "") != "#backend-test" {
		t.Errorf("Test backend button: name %q hx-post %q hx-target %q", btn.AttrOr("name", ""), btn.AttrOr("hx-post", ""), btn.AttrOr("hx-target", ""))
	}
	if first := doc.Find(`[data-testid="agent-form"] button[type="submit"]`).First(); first.AttrOr("name", "") == "test_backend" {
		t.Error("Test backend is the form's first submit button: Enter would test instead of saving")
	}

	tests := []struct {
		name, url string
		want      string
		ok        string
	}{
		{"refused", refused, "connection refused at " + hostPort, "false"},
		{"up", up, "Reached in", "true"},
	}
	for _, tt := range tests {
		form := RegisterForm("backend_kind", "webhook", "backend_url", tt.url, "test_backend", "1")
		t.Run(tt.name+"/htmx", func(t *testing.T) {
			doc := ParsePage(t, e.PostFormWith("/register", form, "HX-Request", "true", "HX-Target", "backend-test"), http.StatusOK)
			if !IsFragment(doc) {
				t.Error("htmx got a whole page, want the result alone")
			}
			if text, ok := testResult(t, doc); !strings.Contains(text, tt.want) || ok != tt.ok {
				t.Errorf("result %q (ok %s), want %q (ok %s)", text, ok, tt.want, tt.ok)
			}
		})
		t.Run(tt.name+"/no-js", func(t *testing.T) {
			doc := ParsePage(t, e.PostForm("/register", form), http.StatusOK)
			MustTestid(t, doc, "agent-form")
			if text, ok := testResult(t, doc); !strings.Contains(text, tt.want) || ok != tt.ok {
				t.Errorf("result %q (ok %s), want %q (ok %s)", text, ok, tt.want, tt.ok)
			}
			for name, want := range map[string]string{"name": "form-bot", "display_name": "Form Bot", "tags": "form, test", "backend_url": tt.url, "version": "1.0.0"} {
				if got, _ := InputValue(doc, name); got != want {
					t.Errorf("%s = %q after the test, want %q kept", name, got, want)
				}
			}
			if got := doc.Find(`#backend-kind option[selected]`).AttrOr("value", ""); got != agent.BackendWebhook {
				t.Errorf("backend kind %q after the test, want webhook kept", got)
			}
			if got := Text(doc.Find("#description")); got != "Made with the form." {
				t.Errorf("description %q after the test, want it kept", got)
			}
		})
	}
	if doc := e.Page("/account", http.StatusOK); Testid(doc, "account-agent").Length() != 0 {
		t.Error("testing a backend registered an agent")
	}

	// A built-in backend runs here: nothing to reach.
	doc = ParsePage(t, e.PostFormWith("/register", RegisterForm("test_backend", "1"), "HX-Request", "true"), http.StatusOK)
	if text, ok := testResult(t, doc); !strings.Contains(text, "nothing to reach") || ok != "true" {
		t.Errorf("builtin: %q (ok %s)", text, ok)
	}

	// Invalid settings are refused as saving refuses them: nothing is sent.
	form := RegisterForm("backend_kind", "webhook", "backend_url", "ftp://example.org/x", "test_backend", "1")
	doc = ParsePage(t, e.PostFormWith("/register", form, "HX-Request", "true"), http.StatusOK)
	if text, ok := testResult(t, doc); !strings.Contains(text, "Fix the backend settings first") || !strings.Contains(text, "URL: ") || ok != "false" {
		t.Errorf("invalid backend, htmx: %q (ok %s)", text, ok)
	}
	doc = ParsePage(t, e.PostForm("/register", form), http.StatusUnprocessableEntity)
	MustTestid(t, doc, "error-backend.url")
}

// TestTestBackendRefusesPrivateHosts: without --allow-private-endpoints
// the button refuses a loopback URL as saving does (the SSRF rule), and
// makes no request.
func TestTestBackendRefusesPrivateHosts(t *testing.T) {
	e := New(t)
	UseHealth(e)
	e.Signup("alice", "password-alice")
	var mu sync.Mutex
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	form := RegisterForm("backend_kind", "webhook", "backend_url", srv.URL+"/hook", "test_backend", "1")
	doc := ParsePage(t, e.PostFormWith("/register", form, "HX-Request", "true"), http.StatusOK)
	if text, ok := testResult(t, doc); !strings.Contains(text, "URL: ") || ok != "false" {
		t.Errorf("loopback webhook: %q (ok %s), want the URL refused", text, ok)
	}
	mu.Lock()
	defer mu.Unlock()
	if hits != 0 {
		t.Errorf("the refused backend got %d requests", hits)
	}
}

// TestTestBackendEditUsesStoredKey: on the edit form a blank key field
// means "keep the stored key", for the test as for saving; a typed key is
// tested instead, and testing saves nothing.
func TestTestBackendEditUsesStoredKey(t *testing.T) {
	e := healthEnv(t)
	var mu sync.Mutex
	var seen []string
	llm := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer sk-stored" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m"}]}`)
	}))
	t.Cleanup(llm.Close)
	in := SimpleInput("llm-bot", "LLM Bot")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: llm.URL + "/v1", Model: "m", APIKey: "sk-stored"}
	id := e.SeedAgent("alice", in).Record.ID
	edit := "/account/agents/" + id + "/edit"

	doc := e.Page(edit, http.StatusOK)
	if got := MustTestid(t, doc, "test-backend").AttrOr("hx-post", ""); got != edit {
		t.Errorf("edit form's Test backend posts to %q, want %q", got, edit)
	}
	form := RegisterForm("name", "llm-bot", "backend_kind", "llm", "backend_url", llm.URL+"/v1", "backend_model", "m", "test_backend", "1")
	doc = ParsePage(t, e.PostFormWith(edit, form, "HX-Request", "true"), http.StatusOK)
	if text, ok := testResult(t, doc); !strings.HasPrefix(text, "Reached in") || ok != "true" {
		t.Errorf("blank key: %q (ok %s), want reached with the stored key", text, ok)
	}
	doc = ParsePage(t, e.PostForm(edit, form), http.StatusOK)
	if text, _ := testResult(t, doc); !strings.HasPrefix(text, "Reached in") {
		t.Errorf("blank key, no JS: %q, want reached", text)
	}
	MustTestid(t, doc, "api-key-stored")

	form.Set("backend_api_key", "sk-typed-wrong")
	resp := e.PostFormWith(edit, form, "HX-Request", "true")
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "sk-typed-wrong") || strings.Contains(string(body), "sk-stored") {
		t.Fatal("a key is rendered in the result")
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	doc = ParsePage(t, resp, http.StatusOK)
	if text, ok := testResult(t, doc); !strings.Contains(text, "401 from the model endpoint: check the key") || ok != "false" {
		t.Errorf("typed wrong key: %q (ok %s), want the 401 explained", text, ok)
	}
	mu.Lock()
	want := []string{"Bearer sk-stored", "Bearer sk-stored", "Bearer sk-typed-wrong"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("the model endpoint saw %q, want %q", seen, want)
	}
	mu.Unlock()
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || b.APIKey != "sk-stored" {
		t.Errorf("after testing, stored key %q (%v), want sk-stored unchanged", b.APIKey, err)
	}
}

// TestOwnerSeesProbeError: saving probes the agent once, so /account and
// the edit page show its health and the probe's error in words at once;
// the public agent page does not show the error (it names the host).
func TestOwnerSeesProbeError(t *testing.T) {
	e := healthEnv(t)
	refused, hostPort := RefusingURL(t, "/secret-path/hook")
	resp := e.PostForm("/register", RegisterForm("backend_kind", "webhook", "backend_url", refused))
	agentPath := Location(t, resp)
	doc := e.Page(agentPath, http.StatusOK)
	if got := Text(MustTestid(t, doc, "flash")); !strings.Contains(got, "did not answer: connection refused at "+hostPort) {
		t.Errorf("flash after saving = %q, want the probe's error", got)
	}
	if html, _ := e.Visitor().Page(agentPath, http.StatusOK).Html(); strings.Contains(html, "connection refused") {
		t.Error("the public agent page shows the probe's error")
	}

	doc = e.Page("/account", http.StatusOK)
	row := MustTestid(t, doc, "account-agent")
	h := row.Find(`[data-testid="owner-health"]`)
	if h.Length() != 1 {
		t.Fatalf("account row has %d owner-health, want 1", h.Length())
	}
	if got := Text(h.Find(`[data-testid="health-error"]`)); !strings.Contains(got, "connection refused at "+hostPort) || strings.Contains(got, "secret-path") {
		t.Errorf("account: last probe error %q, want connection refused at %s (and no URL path)", got, hostPort)
	}
	state := h.Find(`[data-testid="health-state"]`)
	word := h.AttrOr("data-state", "")
	if word != agent.HealthDegraded || state.AttrOr("href", "") != "/help/status#"+word {
		t.Errorf("account: state %q linking to %q, want degraded linking to its explanation", word, state.AttrOr("href", ""))
	}
	if got := Text(h.Find(`[data-testid="health-checked"]`)); !strings.Contains(got, "checked just now") {
		t.Errorf("account: checked %q, want checked just now", got)
	}

	id := row.AttrOr("data-agent-id", "")
	doc = e.Page("/account/agents/"+id+"/edit", http.StatusOK)
	if got := Text(MustTestid(t, doc, "edit-health").Find(`[data-testid="health-error"]`)); !strings.Contains(got, "connection refused at "+hostPort) {
		t.Errorf("edit page: last probe error %q", got)
	}
}

// TestOwnerSeesHealthyAgent: an agent whose backend answers is healthy
// once saved, with no error shown.
func TestOwnerSeesHealthyAgent(t *testing.T) {
	e := healthEnv(t)
	resp := e.PostForm("/register", RegisterForm("backend_kind", "webhook", "backend_url", upWebhook(t)))
	doc := e.Page(Location(t, resp), http.StatusOK)
	if got := Text(MustTestid(t, doc, "flash")); !strings.Contains(got, "Its backend answered in") {
		t.Errorf("flash = %q, want the backend's answer time", got)
	}
	doc = e.Page("/account", http.StatusOK)
	h := MustTestid(t, doc, "owner-health")
	if h.AttrOr("data-state", "") != agent.HealthHealthy || Testid(doc, "health-error").Length() != 0 {
		t.Errorf("account: state %q, errors %d; want healthy without an error", h.AttrOr("data-state", ""), Testid(doc, "health-error").Length())
	}
}

// TestHealthPartsNeedTracker: a portal built without health shows no
// Test backend button and no owner diagnostics, and refuses a test.
func TestHealthPartsNeedTracker(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	e.SeedAgent("alice", SimpleInput("plain-bot", "Plain Bot"))
	if doc := e.Page("/register", http.StatusOK); Testid(doc, "test-backend").Length()+Testid(doc, "backend-test").Length() != 0 {
		t.Error("register form offers Test backend without a prober")
	}
	if doc := e.Page("/account", http.StatusOK); Testid(doc, "owner-health").Length() != 0 {
		t.Error("account shows health without a tracker")
	}
	resp := e.PostForm("/register", RegisterForm("test_backend", "1"))
	ParsePage(t, resp, http.StatusServiceUnavailable)
}

// TestStatusHelp: /help/status explains every status word under its own
// anchor, for anyone.
func TestStatusHelp(t *testing.T) {
	e := New(t)
	doc := e.Page("/help/status", http.StatusOK)
	for _, word := range []string{"online", "stale", "offline", agent.HealthHealthy, agent.HealthDegraded, agent.HealthFailing, agent.HealthUnknown} {
		s := doc.Find("#" + word)
		if s.Length() != 1 || s.AttrOr("data-testid", "") != "status-word" || len(Text(s.Find("dd"))) < 20 {
			t.Errorf("#%s: %d elements, testid %q, text %q; want one explained word", word, s.Length(), s.AttrOr("data-testid", ""), Text(s.Find("dd")))
		}
	}
	if n := Testid(doc, "status-word").Length(); n != 7 {
		t.Errorf("%d status words explained, want 7", n)
	}
}
