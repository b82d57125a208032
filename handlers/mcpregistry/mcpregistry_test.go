package mcpregistry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/mcpregistry"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// spec is the MCP Registry's published OpenAPI document (vendored).
func spec(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile("../../testdata/mcpregistry/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the vendored OpenAPI document does not validate: %v", err)
	}
	return doc
}

// get requests path and validates request and response against the
// registry's OpenAPI operation at tmpl (path params given); it returns
// the status and body.
func get(t *testing.T, e *handlertest.Env, doc *openapi3.T, tmpl, path string, params map[string]string) (int, []byte) {
	t.Helper()
	resp := e.Do("GET", path, nil)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	item := doc.Paths.Find(tmpl)
	if item == nil || item.Get == nil {
		t.Fatalf("no GET %s in the registry's API", tmpl)
	}
	req, _ := http.NewRequest("GET", e.TS.URL+path, nil)
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      &routers.Route{Spec: doc, Path: tmpl, PathItem: item, Method: "GET", Operation: item.Get},
		Options:    &openapi3filter.Options{MultiError: true},
	}
	if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
		t.Fatalf("GET %s: the request does not fit the registry's API: %v", path, err)
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: resp.StatusCode, Header: resp.Header,
		Body: io.NopCloser(bytes.NewReader(body)), Options: &openapi3filter.Options{MultiError: true, IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		t.Fatalf("GET %s: %d %s\ndoes not fit the registry's API: %v", path, resp.StatusCode, body, err)
	}
	return resp.StatusCode, body
}

// TestSpecCatchesMisfits: the validator refuses what the registry's API
// refuses, so the test below proves something.
func TestSpecCatchesMisfits(t *testing.T) {
	doc := spec(t)
	item := doc.Paths.Find("/v0.1/servers")
	req, _ := http.NewRequest("GET", "http://x/v0.1/servers", nil)
	in := &openapi3filter.RequestValidationInput{Request: req,
		Route: &routers.Route{Spec: doc, Path: "/v0.1/servers", PathItem: item, Method: "GET", Operation: item.Get}}
	for _, bad := range []string{
		`{"servers":[{"server":{"name":"no-slash","description":"d","version":"1"}}]}`,
		`{"servers":[{"server":{"name":"a.b/c","description":"` + strings.Repeat("x", 101) + `","version":"1"}}]}`,
		`{"servers":[{"server":{"name":"a.b/c","description":"d","version":"1"},"_meta":{"io.modelcontextprotocol.registry/official":{"extra":1}}}]}`,
	} {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: 200,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(bad))}
		if err := openapi3filter.ValidateResponse(context.Background(), out); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

func TestServersFitTheRegistrysAPI(t *testing.T) {
	doc := spec(t)
	handlertest.Engines(t, func(t *testing.T, e *handlertest.Env) {
		weather := e.SeedAgent("", handlertest.WeatherInput("weather-bot"))
		long := handlertest.SimpleInput("long-talker", "Long Talker ✓", "talk")
		long.Description = strings.Repeat("Ça parle beaucoup. ", 40) // far over the registry's 100 characters
		e.SeedAgent("alice", long)
		for _, n := range []string{"alpha-one", "alpha-two", "alpha-three"} {
			e.SeedAgent("", handlertest.SimpleInput(n, "Alpha "+n, "alpha"))
		}

		// The whole list, paged two at a time, every page valid.
		seen := map[string]bool{}
		cursor := ""
		for range 10 {
			path := "/v0.1/servers?limit=2"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			_, body := get(t, e, doc, "/v0.1/servers", path, nil)
			list := decode[mcpregistry.ServerList](t, body)
			if list.Metadata.Count != len(list.Servers) || len(list.Servers) > 2 {
				t.Fatalf("page = %+v", list.Metadata)
			}
			for _, s := range list.Servers {
				seen[s.Server.Name] = true
			}
			if cursor = list.Metadata.NextCursor; cursor == "" {
				break
			}
		}
		weatherName := mcpregistry.ServerName(weather.Record)
		if len(seen) != 5 || !seen[weatherName] {
			t.Fatalf("servers seen = %v, want the 5 agents with %s", seen, weatherName)
		}

		// Search.
		_, body := get(t, e, doc, "/v0.1/servers", "/v0.1/servers?search=weather", nil)
		list := decode[mcpregistry.ServerList](t, body)
		if len(list.Servers) != 1 || list.Servers[0].Server.Name != weatherName {
			t.Fatalf("search = %+v", list.Servers)
		}
		s := list.Servers[0].Server
		if s.Remotes[0].URL != e.TS.URL+"/mcp" || s.Version != "1.2.0" || s.Title != "Weather Bot" {
			t.Errorf("server = %+v", s)
		}

		// updated_since: none is newer than a time to come.
		future := url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
		_, body = get(t, e, doc, "/v0.1/servers", "/v0.1/servers?updated_since="+future, nil)
		if l := decode[mcpregistry.ServerList](t, body); len(l.Servers) != 0 {
			t.Errorf("updated_since in the future: %d servers", len(l.Servers))
		}
		past := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
		_, body = get(t, e, doc, "/v0.1/servers", "/v0.1/servers?limit=100&updated_since="+past, nil)
		if l := decode[mcpregistry.ServerList](t, body); len(l.Servers) != 5 {
			t.Errorf("updated_since an hour ago: %d servers", len(l.Servers))
		}

		// One server, latest version, by its escaped name.
		tmpl := "/v0.1/servers/{serverName}/versions/{version}"
		esc := url.PathEscape(weatherName)
		status, body := get(t, e, doc, tmpl, "/v0.1/servers/"+esc+"/versions/latest", map[string]string{"serverName": esc, "version": "latest"})
		one := decode[mcpregistry.ServerResponse](t, body)
		if status != 200 || one.Server.Name != weatherName {
			t.Fatalf("latest = %d %s", status, body)
		}
		status, _ = get(t, e, doc, tmpl, "/v0.1/servers/"+esc+"/versions/1.2.0", map[string]string{"serverName": esc, "version": "1.2.0"})
		if status != 200 {
			t.Errorf("exact version: %d", status)
		}
		status, _ = get(t, e, doc, tmpl, "/v0.1/servers/"+esc+"/versions/9.9.9", map[string]string{"serverName": esc, "version": "9.9.9"})
		if status != 404 {
			t.Errorf("other version: %d", status)
		}
		status, _ = get(t, e, doc, "/v0.1/servers/{serverName}/versions", "/v0.1/servers/"+esc+"/versions", map[string]string{"serverName": esc})
		if status != 200 {
			t.Errorf("versions: %d", status)
		}
		for _, bad := range []string{"io.github.user%2Fweather", "agentsite." + weather.Record.ID + "%2Fother-name", "nonsense"} {
			status, _ = get(t, e, doc, tmpl, "/v0.1/servers/"+bad+"/versions/latest", map[string]string{"serverName": bad, "version": "latest"})
			if status != 404 {
				t.Errorf("%s: %d, want 404", bad, status)
			}
		}
		// A deleted agent is no server any more.
		if err := e.Server.Registry.Delete(t.Context(), registry.Operator, weather.Record.ID); err != nil {
			t.Fatal(err)
		}
		status, _ = get(t, e, doc, tmpl, "/v0.1/servers/"+esc+"/versions/latest", map[string]string{"serverName": esc, "version": "latest"})
		if status != 404 {
			t.Errorf("deleted: %d", status)
		}
		if resp := e.Do("GET", "/v0.1/servers?limit=0", nil); resp.StatusCode != 400 {
			t.Errorf("limit=0: %d", resp.StatusCode)
		}
	})
}

func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return v
}
