package handlers_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/static"
)

// TestFormLimits: an oversized form is a 413, with or without a
// Content-Length.
func TestFormLimits(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	big := RegisterForm("description", strings.Repeat("x", handlers.MaxFormBytes+1)).Encode()

	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = io.MultiReader(body) // hides the length: chunked encoding
		}
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.TS.URL+"/register", body)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.TS.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("chunked=%v: status %d, want 413", chunked, resp.StatusCode)
		}
	}
	if n, _ := e.Store.SearchAgents(t.Context(), SearchAll()); len(n.Listings) != 0 {
		t.Error("an oversized form registered an agent")
	}
}

// TestCrossOriginForms: a cross-site POST is refused before any handler,
// with a page.
func TestCrossOriginForms(t *testing.T) {
	e := New(t)
	e.Signup("alice", "password-alice")
	for _, path := range []string{"/login", "/signup", "/logout", "/register", "/account/tokens"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.TS.URL+path, strings.NewReader(url.Values{"name": {"x"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := e.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// The refusal is the site's error page, for the logged-in user.
		doc := ParsePage(t, resp, http.StatusForbidden)
		MustTestid(t, doc, "error-page")
		MustTestid(t, doc, "nav-logout")
	}
	// Still logged in: the cross-site logout did nothing.
	MustTestid(t, e.Page("/", http.StatusOK), "nav-logout")
}

func TestStaticAssets(t *testing.T) {
	e := New(t)
	tests := []struct {
		name, ctype string
	}{
		{"app.css", "text/css; charset=utf-8"},
		{"app.js", "text/javascript; charset=utf-8"},
		{"htmx.min.js", "text/javascript; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := static.Path(tt.name)
			if !strings.HasPrefix(p, "/static/") || !strings.Contains(p, ".") || strings.HasSuffix(p, "/"+tt.name) {
				t.Fatalf("Path(%q) = %q, want a hashed name", tt.name, p)
			}
			resp := e.Do(http.MethodGet, p, nil, "Accept-Encoding", "identity")
			WantStatus(t, resp, http.StatusOK)
			if got := resp.Header.Get("Content-Type"); got != tt.ctype {
				t.Errorf("Content-Type = %q", got)
			}
			if got := resp.Header.Get("Cache-Control"); got != "public, max-age=31536000, immutable" {
				t.Errorf("Cache-Control = %q", got)
			}
			plain, _ := io.ReadAll(resp.Body)
			if len(plain) == 0 {
				t.Fatal("empty asset")
			}
			// gzip when asked, same bytes.
			resp = e.Do(http.MethodGet, p, nil, "Accept-Encoding", "gzip")
			if resp.Header.Get("Content-Encoding") == "gzip" {
				zr, err := gzip.NewReader(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				unz, _ := io.ReadAll(zr)
				if string(unz) != string(plain) {
					t.Error("gzip body differs")
				}
			}
			// Revalidation.
			etag := resp.Header.Get("ETag")
			WantStatus(t, e.Do(http.MethodGet, p, nil, "If-None-Match", etag), http.StatusNotModified)
		})
	}
	for _, p := range []string{"/static/app.css", "/static/app.00000000.css", "/static/", "/static/../go.mod"} {
		if resp := e.Do(http.MethodGet, p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", p, resp.StatusCode)
		}
	}
	// Pages link the hashed URLs.
	doc := e.Page("/", http.StatusOK)
	if href := doc.Find(`link[rel=stylesheet]`).AttrOr("href", ""); href != static.Path("app.css") {
		t.Errorf("stylesheet href = %q", href)
	}
	if n := doc.Find(`script[src="` + static.Path("htmx.min.js") + `"]`).Length(); n != 1 {
		t.Error("htmx not linked")
	}
	if cfg := doc.Find(`meta[name=htmx-config]`).AttrOr("content", ""); !strings.Contains(cfg, `"includeIndicatorStyles":false`) {
		t.Errorf("htmx-config = %q", cfg)
	}
}

// TestErrorDispatch: the root's error handlers answer page requests with
// the portal's error page (for the logged-in user) and API requests with
// JSON.
func TestErrorDispatch(t *testing.T) {
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.RateLimit = 1 })
	e.Signup("alice", "password-alice")
	pages := []struct {
		name   string
		resp   func() *http.Response
		status int
	}{
		{"405", func() *http.Response { return e.Do(http.MethodGet, "/logout", nil) }, http.StatusMethodNotAllowed},
		{"404", func() *http.Response { return e.Do(http.MethodGet, "/no/such/page", nil) }, http.StatusNotFound},
		{"413", func() *http.Response {
			return e.PostForm("/register", RegisterForm("description", strings.Repeat("x", handlers.MaxFormBytes+1)))
		}, http.StatusRequestEntityTooLarge},
		{"429", func() *http.Response {
			e.PostForm("/login", url.Values{"handle": {"alice"}, "password": {"wrong-password"}})
			return e.PostForm("/login", url.Values{"handle": {"alice"}, "password": {"wrong-password"}})
		}, http.StatusTooManyRequests},
	}
	for _, tt := range pages {
		t.Run("page "+tt.name, func(t *testing.T) {
			resp := tt.resp()
			doc := ParsePage(t, resp, tt.status)
			if got := MustTestid(t, doc, "error-page").AttrOr("data-status", ""); got != tt.name {
				t.Errorf("error page data-status = %q", got)
			}
			MustTestid(t, doc, "nav-logout")
			if tt.status == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
				t.Error("429 page without Retry-After")
			}
		})
	}
	for _, tt := range []struct {
		method, path, code string
		status             int
	}{
		{http.MethodDelete, "/api/v1/node", "method_not_allowed", http.StatusMethodNotAllowed},
		{http.MethodGet, "/api/v1/nope", "not_found", http.StatusNotFound},
	} {
		t.Run("api "+tt.code, func(t *testing.T) {
			resp := e.Do(tt.method, tt.path, nil)
			WantStatus(t, resp, tt.status)
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q", ct)
			}
			if got := Decode[httpkit.ErrorBody](t, resp); got.Error.Code != tt.code {
				t.Errorf("code = %q, want %q", got.Error.Code, tt.code)
			}
		})
	}
}
