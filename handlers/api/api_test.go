package api_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestAPICreateGetUpdateDelete(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		alice := e.UserToken("alice")
		resp := e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(alice)...)
		WantStatus(t, resp, http.StatusCreated)
		created := Decode[apiwire.Agent](t, resp)
		if !agent.ValidID(created.ID) || created.Owner != "alice" || !created.Local || created.Status != "online" {
			t.Fatalf("created agent = %+v", created)
		}
		if got := resp.Header.Get("Location"); got != "/api/v1/agents/"+created.ID {
			t.Errorf("Location = %q", got)
		}
		if created.Publisher != e.Node.PeerID() || created.HostPeerID != e.Node.PeerID() {
			t.Errorf("publisher/host = %s/%s, want %s", created.Publisher, created.HostPeerID, e.Node.PeerID())
		}
		if len(created.Endpoints) != 1 || created.Endpoints[0].Protocol != agent.MCPProtocol {
			t.Errorf("endpoints = %+v", created.Endpoints)
		}

		// The stored envelope verifies: the listing went through Seal/Open.
		l, err := e.Store.GetAgent(t.Context(), created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := agent.Open(l.Envelope, e.Server.Now()); err != nil {
			t.Fatalf("stored envelope does not verify: %v", err)
		}

		got := Decode[apiwire.Agent](t, e.Do("GET", "/api/v1/agents/"+created.ID, nil))
		if got.Description != "Forecasts for any city.\nUses open data." || len(got.Skills) != 1 || got.Skills[0].Examples[0] != "Paris tomorrow?" {
			t.Errorf("get = %+v", got)
		}

		// Update: new seq, same id.
		in := WeatherInput("weather-bot")
		in.DisplayName = "Weather Bot 2"
		resp = e.Do("PUT", "/api/v1/agents/"+created.ID, in, Bearer(alice)...)
		WantStatus(t, resp, http.StatusOK)
		updated := Decode[apiwire.Agent](t, resp)
		if updated.ID != created.ID || updated.Seq <= created.Seq || updated.DisplayName != "Weather Bot 2" {
			t.Errorf("updated = %+v (created seq %d)", updated, created.Seq)
		}

		// Someone else cannot change or delete it; the operator can.
		bob := e.UserToken("bob")
		WantStatus(t, e.Do("PUT", "/api/v1/agents/"+created.ID, in, Bearer(bob)...), http.StatusForbidden)
		WantStatus(t, e.Do("DELETE", "/api/v1/agents/"+created.ID, nil, Bearer(bob)...), http.StatusForbidden)

		// Delete publishes a tombstone: 410 on read, gone from search.
		WantStatus(t, e.Do("DELETE", "/api/v1/agents/"+created.ID, nil, Bearer(OperatorToken)...), http.StatusNoContent)
		WantStatus(t, e.Do("GET", "/api/v1/agents/"+created.ID, nil), http.StatusGone)
		list := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?q=weather", nil))
		if len(list.Agents) != 0 {
			t.Errorf("deleted agent still listed: %+v", list.Agents)
		}
		WantStatus(t, e.Do("DELETE", "/api/v1/agents/"+created.ID, nil, Bearer(alice)...), http.StatusNotFound)
		if _, err := e.Store.GetBackend(t.Context(), created.ID); err == nil {
			t.Error("backend settings survived the delete")
		}

		// The name can be registered again, with a higher seq than the tombstone.
		resp = e.Do("POST", "/api/v1/agents", WeatherInput("weather-bot"), Bearer(alice)...)
		WantStatus(t, resp, http.StatusCreated)
		again := Decode[apiwire.Agent](t, resp)
		if again.ID != created.ID || again.Seq <= updated.Seq {
			t.Errorf("re-registered = %+v", again)
		}
	})
}

func TestAPIErrors(t *testing.T) {
	e := New(t)
	alice := e.UserToken("alice")
	e.Do("POST", "/api/v1/agents", WeatherInput("taken-name"), Bearer(alice)...)

	big := WeatherInput("big")
	big.Description = strings.Repeat("x", 70<<10)
	private := WeatherInput("private-hook")
	private.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://127.0.0.1:9/hook"}
	metadata := WeatherInput("metadata-hook")
	metadata.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://169.254.169.254/latest/meta-data"}
	compat := WeatherInput("compat-hook")
	compat.Backend = agent.Backend{Kind: agent.BackendWebhook, URL: "http://[::127.0.0.1]:9/hook"}
	sixToFour := WeatherInput("sixtofour-hook")
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
		{"no token", "POST", "/api/v1/agents", WeatherInput("a-b-c"), nil, 401, "unauthorized", nil},
		{"wrong token", "POST", "/api/v1/agents", WeatherInput("a-b-c"), Bearer("as_nope"), 401, "unauthorized", nil},
		{"malformed json", "POST", "/api/v1/agents", `{"name": `, Bearer(alice), 400, "bad_json", nil},
		{"unknown field", "POST", "/api/v1/agents", `{"name":"abc","colour":"red"}`, Bearer(alice), 400, "bad_json", nil},
		{"two objects", "POST", "/api/v1/agents", `{"name":"abc"} {}`, Bearer(alice), 400, "bad_json", nil},
		{"empty body", "POST", "/api/v1/agents", "", Bearer(alice), 400, "bad_json", nil},
		{"invalid fields", "POST", "/api/v1/agents", bad, Bearer(alice), 422, "invalid_input", []string{"name", "display_name", "tags[1]", "backend.kind"}},
		{"duplicate name", "POST", "/api/v1/agents", WeatherInput("taken-name"), Bearer(alice), 422, "invalid_input", []string{"name"}},
		{"loopback backend", "POST", "/api/v1/agents", private, Bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"metadata backend", "POST", "/api/v1/agents", metadata, Bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"IPv4-compatible loopback backend", "POST", "/api/v1/agents", compat, Bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"6to4 loopback backend", "POST", "/api/v1/agents", sixToFour, Bearer(alice), 422, "invalid_input", []string{"backend.url"}},
		{"too large", "POST", "/api/v1/agents", big, Bearer(alice), 413, "too_large", nil},
		{"bad limit", "GET", "/api/v1/agents?limit=5000", nil, nil, 400, "bad_query", []string{"limit"}},
		{"bad status", "GET", "/api/v1/agents?status=sleepy", nil, nil, 400, "bad_query", []string{"status"}},
		{"bad health", "GET", "/api/v1/agents?health=healthy,sleepy", nil, nil, 400, "bad_query", []string{"health"}},
		{"bad tag", "GET", "/api/v1/agents?tag=%3Cscript%3E", nil, nil, 400, "bad_query", []string{"tag"}},
		{"bad sort", "GET", "/api/v1/agents?sort=popular", nil, nil, 400, "bad_query", []string{"sort"}},
		{"bad cursor", "GET", "/api/v1/agents?cursor=garbage!", nil, nil, 400, "bad_query", []string{"cursor"}},
		{"unknown id", "GET", "/api/v1/agents/" + strings.Repeat("a", agent.IDLen), nil, nil, 404, "not_found", nil},
		{"junk id", "GET", "/api/v1/agents/..%2f..%2fetc", nil, nil, 404, "not_found", nil},
		{"update unknown", "PUT", "/api/v1/agents/" + strings.Repeat("b", agent.IDLen), WeatherInput("other"), Bearer(alice), 404, "not_found", nil},
		{"unknown route", "GET", "/api/v1/nothing", nil, nil, 404, "not_found", nil},
		{"wrong method", "PATCH", "/api/v1/agents", nil, nil, 405, "method_not_allowed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.Do(tt.method, tt.path, tt.body, tt.headers...)
			WantStatus(t, resp, tt.wantStatus)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type = %q", ct)
			}
			got := Decode[httpkit.ErrorBody](t, resp)
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
	Engines(t, func(t *testing.T, e *Env) {
		tok := e.UserToken("carol")
		for i := range 7 {
			in := WeatherInput(fmt.Sprintf("weather-%d", i))
			if i%2 == 0 {
				in.Tags = []string{"weather", "even"}
			}
			WantStatus(t, e.Do("POST", "/api/v1/agents", in, Bearer(tok)...), http.StatusCreated)
		}
		other := WeatherInput("translator")
		other.DisplayName, other.Description, other.Tags = "Translator", "Translates text.", []string{"language"}
		WantStatus(t, e.Do("POST", "/api/v1/agents", other, Bearer(tok)...), http.StatusCreated)

		seen := map[string]bool{}
		cursor := ""
		pages := 0
		for {
			list := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?q=weath&limit=3&cursor="+cursor, nil))
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

		even := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?tag=weather&tag=even", nil))
		if len(even.Agents) != 4 {
			t.Errorf("tag=weather&tag=even gave %d agents, want 4", len(even.Agents))
		}
		lang := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?tag=language&status=online", nil))
		if len(lang.Agents) != 1 || lang.Agents[0].Name != "translator" {
			t.Errorf("tag=language: %+v", lang.Agents)
		}
		none := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?status=offline", nil))
		if len(none.Agents) != 0 {
			t.Errorf("status=offline gave %d agents", len(none.Agents))
		}

		// sort=name orders by display name, across pages too.
		var names []string
		cursor = ""
		for range 10 {
			list := Decode[apiwire.AgentList](t, e.Do("GET", "/api/v1/agents?sort=name&limit=3&cursor="+cursor, nil))
			for _, a := range list.Agents {
				names = append(names, strings.ToLower(a.DisplayName))
			}
			if cursor = list.NextCursor; cursor == "" {
				break
			}
		}
		if len(names) < 8 || !slices.IsSorted(names) {
			t.Errorf("sort=name gave %q, want at least 8 names in order", names)
		}
	})
}

// Every agent carries its health (unknown until its host reports one);
// ?health= filters on it, repeatable or comma-separated, and the default
// order puts failing agents last.
func TestAPIAgentHealth(t *testing.T) {
	Engines(t, func(t *testing.T, e *Env) {
		tok := e.UserToken("dave")
		ids := map[string]string{}
		for _, name := range []string{"weather-sick", "weather-fine", "weather-new"} {
			a := Decode[apiwire.Agent](t, e.Do("POST", "/api/v1/agents", WeatherInput(name), Bearer(tok)...))
			if a.Health.State != agent.HealthUnknown {
				t.Errorf("new agent %s: health %+v, want unknown", name, a.Health)
			}
			ids[name] = a.ID
		}
		l, err := e.Store.GetAgent(t.Context(), ids["weather-sick"])
		if err != nil {
			t.Fatal(err)
		}
		checked := time.Now().UTC().Truncate(time.Second)
		sick := agent.Health{State: agent.HealthFailing, SuccessRate: 0.25, LatencyMS: 900, CheckedAt: checked}
		if _, err := e.Store.SetHealth(t.Context(), l.HostPeerID, map[string]agent.Health{
			ids["weather-sick"]: sick,
			ids["weather-fine"]: {State: agent.HealthHealthy, SuccessRate: 1, LatencyMS: 40, LastOKAt: checked, CheckedAt: checked},
		}); err != nil {
			t.Fatal(err)
		}

		got := Decode[apiwire.Agent](t, e.Do("GET", "/api/v1/agents/"+ids["weather-sick"], nil))
		if got.Health.State != sick.State || got.Health.SuccessRate != sick.SuccessRate || got.Health.LatencyMS != sick.LatencyMS || !got.Health.CheckedAt.Equal(checked) {
			t.Errorf("GET agent: health %+v, want %+v", got.Health, sick)
		}
		names := func(path string) []string {
			t.Helper()
			var out []string
			for _, a := range Decode[apiwire.AgentList](t, e.Do("GET", path, nil)).Agents {
				out = append(out, a.Name+":"+a.Health.State)
			}
			return out
		}
		for path, want := range map[string]string{
			"/api/v1/agents":                                "[weather-new:unknown weather-fine:healthy weather-sick:failing]",
			"/api/v1/agents?q=weather":                      "[weather-new:unknown weather-fine:healthy weather-sick:failing]",
			"/api/v1/agents?health=healthy":                 "[weather-fine:healthy]",
			"/api/v1/agents?health=Failing&health=unknown":  "[weather-new:unknown weather-sick:failing]",
			"/api/v1/agents?health=healthy,unknown&q=weath": "[weather-new:unknown weather-fine:healthy]",
		} {
			if got := fmt.Sprint(names(path)); got != want {
				t.Errorf("GET %s = %s, want %s", path, got, want)
			}
		}
	})
}

// GET /api/v1/node says how the network reaches the node: a lone node on
// loopback has unknown reachability, no relay address and no peers.
func TestAPINodeReachability(t *testing.T) {
	e := New(t)
	raw := Decode[map[string]any](t, e.Do("GET", "/api/v1/node", nil))
	for _, k := range []string{"reachability", "relay_addrs", "direct_peers", "relayed_peers"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in %v", k, raw)
		}
	}
	node := Decode[apiwire.Node](t, e.Do("GET", "/api/v1/node", nil))
	if node.Reachability != "unknown" || node.RelayAddrs == nil || len(node.RelayAddrs) != 0 || node.DirectPeers != 0 || node.RelayedPeers != 0 {
		t.Fatalf("node = %+v", node)
	}
}

func TestAPINodeHealthMetrics(t *testing.T) {
	e := New(t)
	tok := e.UserToken("dave")
	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("node-test"), Bearer(tok)...), http.StatusCreated)

	node := Decode[apiwire.Node](t, e.Do("GET", "/api/v1/node", nil))
	if node.PeerID != e.Node.PeerID() || node.AgentsHosted != 1 || node.Version != "test" || len(node.Addrs) == 0 {
		t.Fatalf("node = %+v", node)
	}
	for _, a := range node.Addrs {
		if !strings.HasSuffix(a, "/p2p/"+node.PeerID) {
			t.Errorf("addr %q is not a full multiaddr", a)
		}
	}
	WantStatus(t, e.Do("GET", "/healthz", nil), http.StatusOK)
	ready := Decode[map[string]any](t, e.Do("GET", "/readyz", nil))
	if ready["ready"] != true {
		t.Errorf("readyz = %v", ready)
	}

	resp := e.Do("GET", "/metrics", nil)
	WantStatus(t, resp, http.StatusOK)
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
	e := New(t)
	tok := e.UserToken("erin")
	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("erin-bot"), Bearer(tok)...), http.StatusCreated)
	u, err := e.Store.GetUserByHandle(t.Context(), "erin")
	if err != nil {
		t.Fatal(err)
	}
	toks, err := e.Store.ListAPITokens(t.Context(), u.ID)
	if err != nil || len(toks) != 1 {
		t.Fatalf("tokens = %v, %v", toks, err)
	}
	if toks[0].LastUsedAt.IsZero() {
		t.Error("last_used_at not stamped")
	}
	if err := e.Store.DeleteAPIToken(t.Context(), u.ID, toks[0].ID); err != nil {
		t.Fatal(err)
	}
	WantStatus(t, e.Do("POST", "/api/v1/agents", WeatherInput("erin-bot-2"), Bearer(tok)...), http.StatusUnauthorized)
}

func TestAPISecrets(t *testing.T) {
	e := New(t)
	tok := e.UserToken("frank")
	in := WeatherInput("llm-bot")
	in.Backend = agent.Backend{Kind: agent.BackendLLM, URL: "https://llm.example.com/v1", Model: "m", APIKey: "sk-very-secret-key"}
	resp := e.Do("POST", "/api/v1/agents", in, Bearer(tok)...)
	WantStatus(t, resp, http.StatusCreated)
	a := Decode[apiwire.Agent](t, resp)
	for _, path := range []string{"/api/v1/agents/" + a.ID, "/api/v1/agents?q=llm", "/agents/" + a.ID} {
		body, _ := io.ReadAll(e.Do("GET", path, nil).Body)
		if strings.Contains(string(body), "sk-very-secret-key") {
			t.Errorf("%s leaks the API key", path)
		}
	}
	// An update that leaves the key blank keeps it.
	in.Backend.APIKey = ""
	WantStatus(t, e.Do("PUT", "/api/v1/agents/"+a.ID, in, Bearer(tok)...), http.StatusOK)
	b, err := e.Store.GetBackend(t.Context(), a.ID)
	if err != nil || b.APIKey != "sk-very-secret-key" {
		t.Errorf("backend after blank-key update = %v, %v", b, err)
	}
}

func TestAPICrossOriginAndRateLimit(t *testing.T) {
	e := New(t)
	tok := e.UserToken("gina")
	resp := e.Do("POST", "/api/v1/agents", WeatherInput("cross-site"), append(Bearer(tok), "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")...)
	WantStatus(t, resp, http.StatusForbidden)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || Decode[httpkit.ErrorBody](t, resp).Error.Code != "cross_origin" {
		t.Errorf("cross-origin refusal is %q, want the JSON error cross_origin", ct)
	}

	// RateLimit 1: one login attempt and six writes per minute per IP.
	e.Server.Config.RateLimit = 1
	e.TS.Config.Handler = e.Server.Handler()
	codes := []int{}
	for i := range 8 {
		resp := e.Do("POST", "/api/v1/agents", WeatherInput(fmt.Sprintf("rate-%d", i)), Bearer(tok)...)
		codes = append(codes, resp.StatusCode)
	}
	if codes[0] != http.StatusCreated || codes[5] != http.StatusCreated || codes[6] != http.StatusTooManyRequests || codes[7] != http.StatusTooManyRequests {
		t.Errorf("statuses = %v, want 6 created then 429", codes)
	}
	resp = e.Do("POST", "/api/v1/agents", WeatherInput("rate-x"), Bearer(tok)...)
	if resp.Header.Get("Retry-After") == "" || Decode[httpkit.ErrorBody](t, resp).Error.Code != "rate_limited" {
		t.Error("429 without Retry-After or rate_limited code")
	}
	// Logins have their own, stricter budget, unaffected by the writes.
	login := e.PostForm("/login", url.Values{"handle": {"gina"}, "password": {"wrong-password"}})
	if login.StatusCode == http.StatusTooManyRequests {
		t.Error("API writes used up the login budget")
	}
	login = e.PostForm("/login", url.Values{"handle": {"gina"}, "password": {"wrong-password"}})
	WantStatus(t, login, http.StatusTooManyRequests)
}

func TestAPIRenameIsRefused(t *testing.T) {
	e := New(t)
	tok := e.UserToken("hank")
	resp := e.Do("POST", "/api/v1/agents", WeatherInput("hank-bot"), Bearer(tok)...)
	WantStatus(t, resp, http.StatusCreated)
	a := Decode[apiwire.Agent](t, resp)
	resp = e.Do("PUT", "/api/v1/agents/"+a.ID, WeatherInput("hank-bot-renamed"), Bearer(tok)...)
	WantStatus(t, resp, http.StatusUnprocessableEntity)
	if Decode[httpkit.ErrorBody](t, resp).Error.Fields["name"] == "" {
		t.Error("no message on the name field")
	}
}

// TestChatLimitKeysIPv6By64: addresses of one IPv6 /64 share one chat
// budget (the burst is 5 at 1 turn a minute).
func TestChatLimitKeysIPv6By64(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.ChatRateLimit = 1 })
	h := e.Server.Handler()
	limited := 0
	for i := range 8 {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/agents/"+strings.Repeat("a", 52)+"/messages", strings.NewReader(`{}`))
		req.RemoteAddr = fmt.Sprintf("[2001:db8:7:7::%x]:5000", i+1)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Fatal("8 turns from one /64 at 1 turn a minute were never limited")
	}
}

// TestAPIWrongTokenSaysSo: a bearer token that is wrong, or revoked, gets
// a 401 that says the token is the problem and what to do; no token at
// all still gets the request for one.
func TestAPIWrongTokenSaysSo(t *testing.T) {
	e := New(t)
	tok := e.UserToken("erin")
	message := func(resp *http.Response) string {
		t.Helper()
		WantStatus(t, resp, http.StatusUnauthorized)
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	for name, bearer := range map[string]string{
		"wrong operator-like token": "not-the-operator-token-at-all",
		"wrong personal token":      tok + "x",
	} {
		got := message(e.Do("POST", "/api/v1/agents", WeatherInput("erin-bot"), Bearer(bearer)...))
		if !strings.Contains(got, "token is wrong") || !strings.Contains(got, "revoked") || !strings.Contains(got, "/account") {
			t.Errorf("%s: %s", name, got)
		}
	}
	if got := message(e.Do("POST", "/api/v1/agents", WeatherInput("erin-bot"))); strings.Contains(got, "token is wrong") || !strings.Contains(got, "Authorization: Bearer") {
		t.Errorf("no token: %s", got)
	}
}
