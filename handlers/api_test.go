package handlers

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/httpkit"
)

type apiErr struct {
	Error httpkit.ErrorJSON `json:"error"`
}

func weatherInput(name string) registry.Input {
	return registry.Input{
		Name:        name,
		DisplayName: "Weather Bot",
		Description: "Forecasts for any city.\nUses open data.",
		Tags:        []string{"weather", "forecast"},
		Skills:      []agent.Skill{{ID: "forecast", Name: "Forecast", Description: "Three-day forecast", Examples: []string{"Paris tomorrow?"}}},
		Version:     "1.2.0",
		Backend:     agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
}

func bearer(token string) []string { return []string{"Authorization", "Bearer " + token} }

func TestAPICreateGetUpdateDelete(t *testing.T) {
	engines(t, func(t *testing.T, e *testEnv) {
		alice := e.userToken("alice")
		resp := e.do("POST", "/api/v1/agents", weatherInput("weather-bot"), bearer(alice)...)
		wantStatus(t, resp, http.StatusCreated)
		created := decode[AgentJSON](t, resp)
		if !agent.ValidID(created.ID) || created.Owner != "alice" || !created.Local || created.Status != "online" {
			t.Fatalf("created agent = %+v", created)
		}
		if got := resp.Header.Get("Location"); got != "/api/v1/agents/"+created.ID {
			t.Errorf("Location = %q", got)
		}
		if created.Publisher != e.node.PeerID() || created.HostPeerID != e.node.PeerID() {
			t.Errorf("publisher/host = %s/%s, want %s", created.Publisher, created.HostPeerID, e.node.PeerID())
		}
		if len(created.Endpoints) != 1 || created.Endpoints[0].Protocol != agent.MCPProtocol {
			t.Errorf("endpoints = %+v", created.Endpoints)
		}

		// The stored envelope verifies: the listing went through Seal/Open.
		l, err := e.st.GetAgent(t.Context(), created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Open(l.Envelope, e.s.now()); err != nil {
			t.Fatalf("stored envelope does not verify: %v", err)
		}

		got := decode[AgentJSON](t, e.do("GET", "/api/v1/agents/"+created.ID, nil))
		if got.Description != "Forecasts for any city.\nUses open data." || len(got.Skills) != 1 || got.Skills[0].Examples[0] != "Paris tomorrow?" {
			t.Errorf("get = %+v", got)
		}

		// Update: new seq, same id.
		in := weatherInput("weather-bot")
		in.DisplayName = "Weather Bot 2"
		resp = e.do("PUT", "/api/v1/agents/"+created.ID, in, bearer(alice)...)
		wantStatus(t, resp, http.StatusOK)
		updated := decode[AgentJSON](t, resp)
		if updated.ID != created.ID || updated.Seq <= created.Seq || updated.DisplayName != "Weather Bot 2" {
			t.Errorf("updated = %+v (created seq %d)", updated, created.Seq)
		}

		// Someone else cannot change or delete it; the operator can.
		bob := e.userToken("bob")
		wantStatus(t, e.do("PUT", "/api/v1/agents/"+created.ID, in, bearer(bob)...), http.StatusForbidden)
		wantStatus(t, e.do("DELETE", "/api/v1/agents/"+created.ID, nil, bearer(bob)...), http.StatusForbidden)

		// Delete publishes a tombstone: 410 on read, gone from search.
		wantStatus(t, e.do("DELETE", "/api/v1/agents/"+created.ID, nil, bearer(testOperatorToken)...), http.StatusNoContent)
		wantStatus(t, e.do("GET", "/api/v1/agents/"+created.ID, nil), http.StatusGone)
		list := decode[agentListJSON](t, e.do("GET", "/api/v1/agents?q=weather", nil))
		if len(list.Agents) != 0 {
			t.Errorf("deleted agent still listed: %+v", list.Agents)
		}
		wantStatus(t, e.do("DELETE", "/api/v1/agents/"+created.ID, nil, bearer(alice)...), http.StatusNotFound)
		if _, err := e.st.GetBackend(t.Context(), created.ID); err == nil {
			t.Error("backend settings survived the delete")
		}

		// The name can be registered again, with a higher seq than the tombstone.
		resp = e.do("POST", "/api/v1/agents", weatherInput("weather-bot"), bearer(alice)...)
		wantStatus(t, resp, http.StatusCreated)
		again := decode[AgentJSON](t, resp)
		if again.ID != created.ID || again.Seq <= updated.Seq {
			t.Errorf("re-registered = %+v", again)
		}
	})
}

func TestAPIErrors(t *testing.T) {
	e := newTestServer(t)
	alice := e.userToken("alice")
	e.do("POST", "/api/v1/agents", weatherInput("taken-name"), bearer(alice)...)

	big := weatherInput("big")
	big.Description = strings.Repeat("x", 70<<10)
	private := weatherInput("private-hook")
	private.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://127.0.0.1:9/hook"}
	metadata := weatherInput("metadata-hook")
	metadata.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://169.254.169.254/latest/meta-data"}
	compat := weatherInput("compat-hook")
	compat.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://[::127.0.0.1]:9/hook"}
	sixToFour := weatherInput("sixtofour-hook")
	sixToFour.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://[2002:7f00:1::]/hook"}
	bad := registry.Input{Name: "X", Tags: []string{"ok", "Not A Tag"}, Backend: agent.Backend{Kind: "telepathy"}}

	tests := []struct {
		name       string
		method     string
		path       string
		body       any
		headers    []string
		wantStatus int
		wantCode   string
		wantFields []string
	}{
		{"no token", "POST", "/api/v1/agents", weatherInput("a-b-c"), nil, 401, "unauthorized", nil},
		{"wrong token", "POST", "/api/v1/agents", weatherInput("a-b-c"), bearer("as_nope"), 401, "unauthorized", nil},
		{"malformed json", "POST", "/api/v1/agents", `{"name": `, bearer(alice), 400, "bad_json", nil},
		{"unknown field", "POST", "/api/v1/agents", `{"name":"abc","colour":"red"}`, bearer(alice), 400, "bad_json", nil},
		{"two objects", "POST", "/api/v1/agents", `{"name":"abc"} {}`, bearer(alice), 400, "bad_json", nil},
		{"empty body", "POST", "/api/v1/agents", "", bearer(alice), 400, "bad_json", nil},
		{"invalid fields", "POST", "/api/v1/agents", bad, bearer(alice), 422, "invalid_input", []string{"name", "display_name", "tags[1]", "backend.kind"}},
		{"duplicate name", "POST", "/api/v1/agents", weatherInput("taken-name"), bearer(alice), 422, "invalid_input", []string{"name"}},
		{"loopback backend", "POST", "/api/v1/agents", private, bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"metadata backend", "POST", "/api/v1/agents", metadata, bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"IPv4-compatible loopback backend", "POST", "/api/v1/agents", compat, bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"6to4 loopback backend", "POST", "/api/v1/agents", sixToFour, bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"too large", "POST", "/api/v1/agents", big, bearer(alice), 413, "too_large", nil},
		{"bad limit", "GET", "/api/v1/agents?limit=5000", nil, nil, 400, "bad_query", []string{"limit"}},
		{"bad status", "GET", "/api/v1/agents?status=sleepy", nil, nil, 400, "bad_query", []string{"status"}},
		{"bad tag", "GET", "/api/v1/agents?tag=%3Cscript%3E", nil, nil, 400, "bad_query", []string{"tag"}},
		{"bad cursor", "GET", "/api/v1/agents?cursor=garbage!", nil, nil, 400, "bad_query", []string{"cursor"}},
		{"unknown id", "GET", "/api/v1/agents/" + strings.Repeat("a", agent.IDLen), nil, nil, 404, "not_found", nil},
		{"junk id", "GET", "/api/v1/agents/..%2f..%2fetc", nil, nil, 404, "not_found", nil},
		{"update unknown", "PUT", "/api/v1/agents/" + strings.Repeat("b", agent.IDLen), weatherInput("other"), bearer(alice), 404, "not_found", nil},
		{"unknown route", "GET", "/api/v1/nothing", nil, nil, 404, "not_found", nil},
		{"wrong method", "PATCH", "/api/v1/agents", nil, nil, 405, "method_not_allowed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(tt.method, tt.path, tt.body, tt.headers...)
			wantStatus(t, resp, tt.wantStatus)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type = %q", ct)
			}
			got := decode[apiErr](t, resp)
			if got.Error.Code != tt.wantCode || got.Error.Message == "" {
				t.Errorf("error = %+v, want code %s", got.Error, tt.wantCode)
			}
			for _, f := range tt.wantFields {
				if got.Error.Fields[f] == "" {
					t.Errorf("no message for field %q in %v", f, got.Error.Fields)
				}
			}
		})
	}
}

func TestAPISearchAndPagination(t *testing.T) {
	engines(t, func(t *testing.T, e *testEnv) {
		tok := e.userToken("carol")
		for i := range 7 {
			in := weatherInput(fmt.Sprintf("weather-%d", i))
			if i%2 == 0 {
				in.Tags = []string{"weather", "even"}
			}
			wantStatus(t, e.do("POST", "/api/v1/agents", in, bearer(tok)...), http.StatusCreated)
		}
		other := weatherInput("translator")
		other.DisplayName, other.Description, other.Tags = "Translator", "Translates text.", []string{"language"}
		wantStatus(t, e.do("POST", "/api/v1/agents", other, bearer(tok)...), http.StatusCreated)

		seen := map[string]bool{}
		cursor := ""
		pages := 0
		for {
			list := decode[agentListJSON](t, e.do("GET", "/api/v1/agents?q=weath&limit=3&cursor="+cursor, nil))
			pages++
			for _, a := range list.Agents {
				if seen[a.ID] {
					t.Fatalf("agent %s repeated across pages", a.Name)
				}
				seen[a.ID] = true
				if !strings.HasPrefix(a.Name, "weather-") {
					t.Errorf("q=weath returned %s", a.Name)
				}
			}
			if list.NextCursor == "" {
				break
			}
			cursor = list.NextCursor
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
		}
		if len(seen) != 7 || pages != 3 {
			t.Errorf("saw %d agents in %d pages, want 7 in 3", len(seen), pages)
		}

		even := decode[agentListJSON](t, e.do("GET", "/api/v1/agents?tag=weather&tag=even", nil))
		if len(even.Agents) != 4 {
			t.Errorf("tag=weather&tag=even gave %d agents, want 4", len(even.Agents))
		}
		lang := decode[agentListJSON](t, e.do("GET", "/api/v1/agents?tag=language&status=online", nil))
		if len(lang.Agents) != 1 || lang.Agents[0].Name != "translator" {
			t.Errorf("tag=language: %+v", lang.Agents)
		}
		none := decode[agentListJSON](t, e.do("GET", "/api/v1/agents?status=offline", nil))
		if len(none.Agents) != 0 {
			t.Errorf("status=offline gave %d agents", len(none.Agents))
		}
	})
}

func TestAPINodeHealthMetrics(t *testing.T) {
	e := newTestServer(t)
	tok := e.userToken("dave")
	wantStatus(t, e.do("POST", "/api/v1/agents", weatherInput("node-test"), bearer(tok)...), http.StatusCreated)

	node := decode[nodeJSON](t, e.do("GET", "/api/v1/node", nil))
	if node.PeerID != e.node.PeerID() || node.AgentsHosted != 1 || node.Version != "test" || len(node.Addrs) == 0 {
		t.Fatalf("node = %+v", node)
	}
	for _, a := range node.Addrs {
		if !strings.HasSuffix(a, "/p2p/"+node.PeerID) {
			t.Errorf("addr %q is not a full multiaddr", a)
		}
	}
	wantStatus(t, e.do("GET", "/healthz", nil), http.StatusOK)
	ready := decode[map[string]any](t, e.do("GET", "/readyz", nil))
	if ready["ready"] != true {
		t.Errorf("readyz = %v", ready)
	}

	resp := e.do("GET", "/metrics", nil)
	wantStatus(t, resp, http.StatusOK)
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`agentsite_http_requests_total{code="201",method="POST",route="/api/v1/agents"} 1`,
		`agentsite_http_request_duration_seconds_bucket{method="GET",route="/api/v1/node"`,
		`agentsite_listings{status="online"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAPIPersonalTokenRevoked(t *testing.T) {
	e := newTestServer(t)
	tok := e.userToken("erin")
	wantStatus(t, e.do("POST", "/api/v1/agents", weatherInput("erin-bot"), bearer(tok)...), http.StatusCreated)
	u, err := e.st.GetUserByHandle(t.Context(), "erin")
	if err != nil {
		t.Fatal(err)
	}
	toks, err := e.st.ListAPITokens(t.Context(), u.ID)
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens = %v, %v", toks, err)
	}
	if toks[0].LastUsedAt.IsZero() {
		t.Error("last_used_at not stamped")
	}
	if err := e.st.DeleteAPIToken(t.Context(), u.ID, toks[0].ID); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, e.do("POST", "/api/v1/agents", weatherInput("erin-bot-2"), bearer(tok)...), http.StatusUnauthorized)
}

func TestAPISecrets(t *testing.T) {
	e := newTestServer(t)
	tok := e.userToken("frank")
	in := weatherInput("llm-bot")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: "https://llm.example.com/v1", Model: "m", APIKey: "sk-very-secret-key"}
	resp := e.do("POST", "/api/v1/agents", in, bearer(tok)...)
	wantStatus(t, resp, http.StatusCreated)
	a := decode[AgentJSON](t, resp)
	for _, path := range []string{"/api/v1/agents/" + a.ID, "/api/v1/agents?q=llm", "/agents/" + a.ID} {
		body, _ := io.ReadAll(e.do("GET", path, nil).Body)
		if strings.Contains(string(body), "sk-very-secret-key") {
			t.Errorf("%s leaks the API key", path)
		}
	}
	// An update that leaves the key blank keeps it.
	in.Backend.APIKey = ""
	wantStatus(t, e.do("PUT", "/api/v1/agents/"+a.ID, in, bearer(tok)...), http.StatusOK)
	b, err := e.st.GetBackend(t.Context(), a.ID)
	if err != nil || b.APIKey != "sk-very-secret-key" {
		t.Errorf("backend after blank-key update = %v, %v", b, err)
	}
}

func TestAPICrossOriginAndRateLimit(t *testing.T) {
	e := newTestServer(t)
	tok := e.userToken("gina")
	resp := e.do("POST", "/api/v1/agents", weatherInput("cross-site"), append(bearer(tok), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")...)
	wantStatus(t, resp, http.StatusForbidden)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || decode[apiErr](t, resp).Error.Code != "cross_origin" {
		t.Errorf("cross-origin refusal is %q, want the JSON error cross_origin", ct)
	}

	// RateLimit 1: one login attempt and six writes per minute per IP.
	e.s.Config.RateLimit = 1
	e.ts.Config.Handler = e.s.Handler()
	codes := []int{}
	for i := range 8 {
		resp := e.do("POST", "/api/v1/agents", weatherInput(fmt.Sprintf("rate-%d", i)), bearer(tok)...)
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != http.StatusCreated || codes[5] != http.StatusCreated || codes[6] != http.StatusTooManyRequests || codes[7] != http.StatusTooManyRequests {
		t.Errorf("statuses = %v, want 6 created then 429", codes)
	}
	resp = e.do("POST", "/api/v1/agents", weatherInput("rate-x"), bearer(tok)...)
	if resp.Header.Get("Retry-After") == "" || decode[apiErr](t, resp).Error.Code != "rate_limited" {
		t.Error("429 without Retry-After or rate_limited code")
	}
	// Logins have their own, stricter budget, unaffected by the writes.
	login := e.postForm("/login", url.Values{"handle": {"gina"}, "password": {"wrong-password"}})
	if login.StatusCode == http.StatusTooManyRequests {
		t.Error("API writes used up the login budget")
	}
	login = e.postForm("/login", url.Values{"handle": {"gina"}, "password": {"wrong-password"}})
	wantStatus(t, login, http.StatusTooManyRequests)
}

func TestAPIRenameIsRefused(t *testing.T) {
	e := newTestServer(t)
	tok := e.userToken("hank")
	resp := e.do("POST", "/api/v1/agents", weatherInput("hank-bot"), bearer(tok)...)
	wantStatus(t, resp, http.StatusCreated)
	a := decode[AgentJSON](t, resp)
	resp = e.do("PUT", "/api/v1/agents/"+a.ID, weatherInput("hank-bot-renamed"), bearer(tok)...)
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	if decode[apiErr](t, resp).Error.Fields["name"] == "" {
		t.Error("no message on the name field")
	}
}
