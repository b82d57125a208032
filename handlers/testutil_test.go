package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite"
)

// testOperatorToken is the operator bearer token of every test server.
const testOperatorToken = "test-operator-token-0123456789"

// testEnv is a whole portal on a real store, a real libp2p host and a real
// HTTP server on 127.0.0.1.
type testEnv struct {
	t      testing.TB
	st     store.Store
	s      *Server
	ts     *httptest.Server
	node   *p2p.Node
	client *http.Client // keeps cookies, does not follow redirects
}

// newTestServer starts a portal on a fresh embedded SQLite store.
func newTestServer(t testing.TB) *testEnv {
	t.Helper()
	return newTestServerWith(t, openTestSQLite(t))
}

// openTestSQLite opens a fresh embedded SQLite store, closed when t ends.
func openTestSQLite(t testing.TB) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "test.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// engines runs fn once per store engine: SQLite always, Postgres when the
// server is reachable (pgtest skips loudly otherwise, and fails under CI).
func engines(t *testing.T, fn func(t *testing.T, env *testEnv)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, newTestServer(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, newTestServerWith(t, pgtest.Open(t))) })
}

// newTestServerWith starts a portal on st.
func newTestServerWith(t testing.TB, st store.Store) *testEnv {
	t.Helper()
	return newTestServerConfig(t, st, nil)
}

// newTestServerConfig starts a portal on st with the test configuration,
// changed by edit if it is not nil.
func newTestServerConfig(t testing.TB, st store.Store, edit func(*Config)) *testEnv {
	t.Helper()
	key, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	node, err := p2p.New(context.Background(), key, p2p.Config{ListenAddrs: []string{"/ip4/127.0.0.1/tcp/0"}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("start libp2p node: %v", err)
	}
	t.Cleanup(func() { _ = node.Close() })
	pub := p2p.NewPublisher(key, &store.Sink{Store: st, SelfID: node.PeerID()})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := Config{
		Version:       "test",
		OperatorToken: testOperatorToken,
		BcryptCost:    bcrypt.MinCost,
		RateLimit:     1000,
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(st, node, pub, logger, cfg, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	client := &http.Client{
		Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return &testEnv{t: t, st: st, s: s, ts: ts, node: node, client: client}
}

// do sends a request with an optional JSON body and headers.
func (e *testEnv) do(method, path string, body any, headers ...string) *http.Response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// postForm posts url-encoded form values like a browser on the same origin.
func (e *testEnv) postForm(path string, vals url.Values) *http.Response {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.ts.URL+path, strings.NewReader(vals.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("POST %s: %v", path, err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// signup creates an account and logs the env's client in.
func (e *testEnv) signup(handle, password string) {
	e.t.Helper()
	resp := e.postForm("/signup", url.Values{"handle": {handle}, "password": {password}, "password_confirm": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		body, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("signup %s: status %d, want 303; body: %.500s", handle, resp.StatusCode, body)
	}
}

// userToken creates a user directly and returns a personal API token.
func (e *testEnv) userToken(handle string) string {
	e.t.Helper()
	u, err := e.s.Accounts.CreateUser(e.t.Context(), handle, "password-"+handle)
	if err != nil {
		e.t.Fatalf("create user %s: %v", handle, err)
	}
	token, hash, err := httpkit.NewAPIToken()
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.st.CreateAPIToken(e.t.Context(), u.ID, "test", hash); err != nil {
		e.t.Fatal(err)
	}
	return token
}

// decode reads a JSON response body into v.
func decode[T any](t testing.TB, resp *http.Response) T {
	t.Helper()
	var v T
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, body, err)
	}
	return v
}

func wantStatus(t testing.TB, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: status %d, want %d; body: %.1000s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, body)
	}
}
