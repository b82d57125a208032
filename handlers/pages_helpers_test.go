package handlers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
)

// page fetches path and parses it; the status must be want.
func (e *testEnv) page(path string, want int, headers ...string) *goquery.Document {
	e.t.Helper()
	resp := e.do(http.MethodGet, path, nil, headers...)
	return parsePage(e.t, resp, want)
}

// parsePage checks the status and content type of an HTML response and
// that it keeps to the CSP (no inline script, style or handler), then
// parses it.
func parsePage(t testing.TB, resp *http.Response, want int) *goquery.Document {
	t.Helper()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d; body: %.1500s", resp.Request.Method, resp.Request.URL, resp.StatusCode, want, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Fatalf("%s: Content-Type %q, want text/html", resp.Request.URL, ct)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	checkCSPClean(t, doc)
	return doc
}

// checkCSPClean fails on anything our CSP (script-src 'self'; style-src
// 'self') would block: inline scripts, <style>, style attributes, on*
// handlers.
func checkCSPClean(t testing.TB, doc *goquery.Document) {
	t.Helper()
	if n := doc.Find("style").Length(); n > 0 {
		t.Errorf("page has %d <style> elements", n)
	}
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if _, ok := s.Attr("src"); !ok {
			t.Errorf("inline <script>: %s", s.Text())
		}
	})
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			if a.Key == "style" || strings.HasPrefix(a.Key, "on") || strings.HasPrefix(a.Key, "hx-on") {
				t.Errorf("<%s %s=%q> breaks the CSP", s.Nodes[0].Data, a.Key, a.Val)
			}
		}
	})
}

// testid selects elements by data-testid, as a browser's querySelectorAll
// does: not inside a <template> (its content is inert, not in the page).
func testid(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(fmt.Sprintf("[data-testid=%q]", id)).Not("template *")
}

// mustTestid is testid that requires at least one match.
func mustTestid(t testing.TB, doc *goquery.Document, id string) *goquery.Selection {
	t.Helper()
	s := testid(doc, id)
	if s.Length() == 0 {
		h, _ := doc.Html()
		t.Fatalf("no [data-testid=%q] in page: %.2000s", id, h)
	}
	return s
}

func text(s *goquery.Selection) string { return strings.TrimSpace(s.Text()) }

// visitor returns the env with a fresh cookie jar: another browser.
func (e *testEnv) visitor() *testEnv {
	jar, _ := cookiejar.New(nil)
	c := *e
	c.client = &http.Client{Jar: jar, CheckRedirect: e.client.CheckRedirect}
	return &c
}

// seedAgent registers in directly through saveAgent, as owner (a new or
// existing account; "" registers as the operator).
func (e *testEnv) seedAgent(owner string, in registry.Input) store.Listing {
	e.t.Helper()
	p := httpkit.Principal{Operator: true}
	if owner != "" {
		u, err := e.st.GetUserByHandle(e.t.Context(), owner)
		if err != nil {
			u, err = e.s.Accounts.CreateUser(e.t.Context(), owner, "password-"+owner)
			if err != nil {
				e.t.Fatalf("create user %s: %v", owner, err)
			}
		}
		p = httpkit.Principal{User: &u}
	}
	l, err := e.s.Registry.Create(e.t.Context(), p.Actor(), in)
	if err != nil {
		e.t.Fatalf("seed agent %s: %v", in.Name, err)
	}
	return l
}

// simpleInput is a minimal valid registration.
func simpleInput(name, display string, tags ...string) registry.Input {
	return registry.Input{
		Name:        name,
		DisplayName: display,
		Description: "Agent " + display,
		Tags:        tags,
		Backend:     agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
}

// registerForm is a valid /register form; override fields with kv pairs.
func registerForm(kv ...string) url.Values {
	v := url.Values{
		"name":              {"form-bot"},
		"display_name":      {"Form Bot"},
		"description":       {"Made with the form."},
		"tags":              {"form, test"},
		"version":           {"1.0"},
		"skill_id":          {"greet", "", ""},
		"skill_name":        {"Greet", "", ""},
		"skill_description": {"Says hello", "", ""},
		"skill_examples":    {"hello\r\nhi there", "", ""},
		"backend_kind":      {"builtin"},
		"backend_builtin":   {"echo"},
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// location is the redirect target of a response.
func location(t testing.TB, resp *http.Response) string {
	t.Helper()
	loc := resp.Header.Get("Location")
	if loc == "" {
		t.Fatalf("%s %s: no Location (status %d)", resp.Request.Method, resp.Request.URL, resp.StatusCode)
	}
	return loc
}

// newChatServer is a test server whose local agents answer with the real
// agent runtime, their backends looked up in the store.
func newChatServer(t *testing.T) *testEnv {
	t.Helper()
	e := newTestServer(t)
	rt := runtime.NewRuntime(func(ctx context.Context, id string) (agent.Backend, error) {
		b, err := e.st.GetBackend(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return agent.Backend{}, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, id)
		}
		return b, err
	}, runtime.RuntimeOptions{AllowPrivate: true, Timeout: 10 * time.Second})
	t.Cleanup(func() { _ = rt.Close() })
	e.s.Chat.Local = rt
	return e
}

// seedEcho registers a local agent with the echo builtin and returns its id.
func (e *testEnv) seedEcho(name, display string) string {
	e.t.Helper()
	return e.seedAgent("", simpleInput(name, display, "demo")).Record.ID
}

// chatMessages are the rendered messages of a chat page: role and text.
func chatMessages(doc *goquery.Document) [][2]string {
	var out [][2]string
	testid(doc, "message").Each(func(_ int, s *goquery.Selection) {
		out = append(out, [2]string{s.AttrOr("data-role", ""), s.Find(".msg-text").Text()})
	})
	return out
}

// searchAll matches every listing of any status.
func searchAll() store.SearchQuery {
	return store.SearchQuery{Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline}}
}
