// Package handlertest starts whole portals for the surfaces' tests: a real
// store (SQLite, or Postgres through pgtest), a real libp2p host, and the
// node's whole URL space on an httptest server, with helpers to drive it as
// a browser or a script would and to read pages by data-testid.
package handlertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gorilla/websocket"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/handlers"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/p2p"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
	"github.com/agentsite/agentsite/store/sqlite"
	"github.com/agentsite/agentsite/store/sqlite/sqlitetest"
)

// OperatorToken is the operator bearer token of every test server.
const OperatorToken = "test-operator-token-0123456789"

// Env is a whole portal on a real store, a real libp2p host and a real
// HTTP server on 127.0.0.1.
type Env struct {
	T      testing.TB
	Store  store.Store
	Server *handlers.Server
	TS     *httptest.Server
	Node   *p2p.Node
	Client *http.Client // keeps cookies, does not follow redirects

	// deps and cfg are what Server was built from (UseHealth builds it
	// again with health).
	deps handlers.Deps
	cfg  handlers.Config
	key  crypto.PrivKey // the node's
}

// SignCards rebuilds the server signing its A2A cards with the node's
// key, as a node does (cmd/agentsite).
func (e *Env) SignCards() {
	e.T.Helper()
	e.deps.CardKey = e.key
	e.build()
}

// New starts a portal on a fresh embedded SQLite store.
func New(t testing.TB) *Env {
	t.Helper()
	return NewWith(t, OpenSQLite(t))
}

// OpenSQLite opens a fresh embedded SQLite store, closed when t ends.
func OpenSQLite(t testing.TB) *sqlite.DB { return sqlitetest.Open(t) }

// Engines runs fn once per store engine: SQLite always, Postgres when the
// server is reachable (pgtest skips loudly otherwise, and fails under CI).
func Engines(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, New(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, NewWith(t, pgtest.Open(t))) })
}

// NewWith starts a portal on st.
func NewWith(t testing.TB, st store.Store) *Env {
	t.Helper()
	return NewConfig(t, st, nil)
}

// NewConfig starts a portal on st with the test configuration,
// changed by edit if it is not nil. Its use cases are built as the node's
// composition root builds them (cmd/agentsite/app.go), without a runtime:
// tests that chat call UseRuntime or set Server.Chat.Local.
func NewConfig(t testing.TB, st store.Store, edit func(*handlers.Config)) *Env {
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
	// The lifetime ends after the HTTP server has closed (cleanups run
	// last in, first out), as a node's ends at shutdown.
	lifetime, end := context.WithCancel(context.Background())
	t.Cleanup(end)
	reg := &registry.Registry{Store: st, Publisher: pub, Network: node, PeerID: node.PeerID(), TTL: agent.DefaultTTL, Logger: logger}
	ch := &chat.Chat{Store: st, Listings: reg, Search: st, Users: st, Logger: logger}
	deps := handlers.Deps{
		Store: st, Node: node, Registry: reg, Chat: ch,
		Live:     &chat.Live{Chat: ch, Lifetime: lifetime, Logger: logger},
		Lifetime: lifetime, Logger: logger,
	}
	// The limits of a node started without flags, but the cheapest
	// password hashing and a login budget no test runs out of by accident.
	cfg := handlers.Config{
		Version:             "test",
		OperatorToken:       OperatorToken,
		BcryptCost:          bcrypt.MinCost,
		RateLimit:           1000,
		ChatRateLimit:       120,
		BodyTimeout:         15 * time.Second,
		WriteTimeout:        30 * time.Second,
		StreamWriteTimeout:  2 * time.Minute,
		MaxSocketsPerClient: 16,
	}
	if edit != nil {
		edit(&cfg)
	}
	e := &Env{T: t, Store: st, Node: node, deps: deps, cfg: cfg, key: key}
	e.build()
	jar, _ := cookiejar.New(nil)
	e.Client = &http.Client{
		Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return e
}

// build builds e.Server from e.deps and e.cfg and serves it on e.TS,
// started on the first call.
func (e *Env) build() {
	e.T.Helper()
	deps := e.deps
	deps.Metrics = prometheus.NewRegistry()
	s, err := handlers.New(deps, e.cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	e.Server = s
	if e.TS != nil {
		e.TS.Config.Handler = s.Handler()
		return
	}
	e.TS = httptest.NewServer(s.Handler())
	e.T.Cleanup(e.TS.Close)
}

// do sends a request with an optional JSON body and headers.
func (e *Env) Do(method, path string, body any, headers ...string) *http.Response {
	e.T.Helper()
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
			e.T.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequestWithContext(e.T.Context(), method, e.TS.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: %v", method, path, err)
	}
	e.T.Cleanup(func() { resp.Body.Close() })
	return resp
}

// postForm posts url-encoded form values like a browser on the same origin.
func (e *Env) PostForm(path string, vals url.Values) *http.Response {
	e.T.Helper()
	req, err := http.NewRequestWithContext(e.T.Context(), http.MethodPost, e.TS.URL+path, strings.NewReader(vals.Encode()))
	if err != nil {
		e.T.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", e.TS.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := e.Client.Do(req)
	if err != nil {
		e.T.Fatalf("POST %s: %v", path, err)
	}
	e.T.Cleanup(func() { resp.Body.Close() })
	return resp
}

// signup creates an account and logs the env's client in.
func (e *Env) Signup(handle, password string) {
	e.T.Helper()
	resp := e.PostForm("/signup", url.Values{"handle": {handle}, "password": {password}, "password_confirm": {password}})
	if resp.StatusCode != http.StatusSeeOther {
		body, _ := io.ReadAll(resp.Body)
		e.T.Fatalf("signup %s: status %d, want 303; body: %.500s", handle, resp.StatusCode, body)
	}
}

// userToken creates a user directly and returns a personal API token.
func (e *Env) UserToken(handle string) string {
	e.T.Helper()
	u, err := e.Server.Accounts.CreateUser(e.T.Context(), handle, "password-"+handle)
	if err != nil {
		e.T.Fatalf("create user %s: %v", handle, err)
	}
	token, hash, err := httpkit.NewAPIToken()
	if err != nil {
		e.T.Fatal(err)
	}
	if _, err := e.Store.CreateAPIToken(e.T.Context(), u.ID, "test", hash); err != nil {
		e.T.Fatal(err)
	}
	return token
}

// decode reads a JSON response body into v.
func Decode[T any](t testing.TB, resp *http.Response) T {
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

func WantStatus(t testing.TB, resp *http.Response, want int) {
	t.Helper()
	if resp.StatusCode != want {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: status %d, want %d; body: %.1000s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, want, body)
	}
}

// page fetches path and parses it; the status must be want.
func (e *Env) Page(path string, want int, headers ...string) *goquery.Document {
	e.T.Helper()
	resp := e.Do(http.MethodGet, path, nil, headers...)
	return ParsePage(e.T, resp, want)
}

// ParsePage checks the status and content type of an HTML response and
// that it keeps to the CSP (no inline script, style or handler), then
// parses it.
func ParsePage(t testing.TB, resp *http.Response, want int) *goquery.Document {
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
	CheckCSPClean(t, doc)
	return doc
}

// CheckCSPClean fails on anything our CSP (script-src 'self'; style-src
// 'self') would block: inline scripts, <style>, style attributes, on*
// handlers.
func CheckCSPClean(t testing.TB, doc *goquery.Document) {
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

// Testid selects elements by data-testid, as a browser's querySelectorAll
// does: not inside a <template> (its content is inert, not in the page).
func Testid(doc *goquery.Document, id string) *goquery.Selection {
	return doc.Find(fmt.Sprintf("[data-testid=%q]", id)).Not("template *")
}

// MustTestid is Testid that requires at least one match.
func MustTestid(t testing.TB, doc *goquery.Document, id string) *goquery.Selection {
	t.Helper()
	s := Testid(doc, id)
	if s.Length() == 0 {
		h, _ := doc.Html()
		t.Fatalf("no [data-testid=%q] in page: %.2000s", id, h)
	}
	return s
}

func Text(s *goquery.Selection) string { return strings.TrimSpace(s.Text()) }

// InputValue is the value attribute of the form control with this name.
func InputValue(doc *goquery.Document, name string) (string, bool) {
	return doc.Find(fmt.Sprintf("[name=%q]", name)).First().Attr("value")
}

// visitor returns the env with a fresh cookie jar: another browser.
func (e *Env) Visitor() *Env {
	jar, _ := cookiejar.New(nil)
	c := *e
	c.Client = &http.Client{Jar: jar, CheckRedirect: e.Client.CheckRedirect}
	return &c
}

// login logs the env's client in through the form.
func (e *Env) Login(handle, password string) {
	e.T.Helper()
	resp := e.PostForm("/login", url.Values{"handle": {handle}, "password": {password}})
	WantStatus(e.T, resp, http.StatusSeeOther)
}

// seedAgent registers in directly through saveAgent, as owner (a new or
// existing account; "" registers as the operator).
func (e *Env) SeedAgent(owner string, in registry.Input) store.Listing {
	e.T.Helper()
	p := httpkit.Principal{Operator: true}
	if owner != "" {
		u, err := e.Store.GetUserByHandle(e.T.Context(), owner)
		if err != nil {
			u, err = e.Server.Accounts.CreateUser(e.T.Context(), owner, "password-"+owner)
			if err != nil {
				e.T.Fatalf("create user %s: %v", owner, err)
			}
		}
		p = httpkit.Principal{User: &u}
	}
	l, err := e.Server.Registry.Create(e.T.Context(), p.Actor(), in)
	if err != nil {
		e.T.Fatalf("seed agent %s: %v", in.Name, err)
	}
	return l
}

// SimpleInput is a minimal valid registration.
func SimpleInput(name, display string, tags ...string) registry.Input {
	return registry.Input{
		Name:        name,
		DisplayName: display,
		Description: "Agent " + display,
		Tags:        tags,
		Backend:     agent.Backend{Kind: agent.BackendBuiltin, Builtin: "echo"},
	}
}

// RegisterForm is a valid /register form; override fields with kv pairs.
func RegisterForm(kv ...string) url.Values {
	v := url.Values{
		"name":              {"form-bot"},
		"display_name":      {"Form Bot"},
		"description":       {"Made with the form."},
		"tags":              {"form, test"},
		"version":           {"1.0.0"},
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
func Location(t testing.TB, resp *http.Response) string {
	t.Helper()
	loc := resp.Header.Get("Location")
	if loc == "" {
		t.Fatalf("%s %s: no Location (status %d)", resp.Request.Method, resp.Request.URL, resp.StatusCode)
	}
	return loc
}

// IsFragment reports whether a parsed response was a fragment, not a page
// (goquery wraps fragments in html/body, so look for our layout).
func IsFragment(doc *goquery.Document) bool {
	return Testid(doc, "nav").Length() == 0 && doc.Find("head title").Length() == 0
}

// SearchAll matches every listing of any status.
func SearchAll() store.SearchQuery {
	return store.SearchQuery{Statuses: []string{store.StatusOnline, store.StatusStale, store.StatusOffline}}
}

// NewChat is a test server whose local agents answer with the real
// agent runtime, their backends looked up in the store.
func NewChat(t *testing.T) *Env {
	t.Helper()
	e := New(t)
	UseRuntime(e)
	return e
}

// UseRuntime makes e's local agents answer with the real agent runtime,
// their backends looked up in the store (NewChat for a server built
// otherwise).
func UseRuntime(e *Env) {
	UseRuntimeWith(e, runtime.RuntimeOptions{})
}

// UseRuntimeWith is UseRuntime with the runtime's options (a slow echo,
// say); private backends are always allowed, turns last 10 s at most.
// Agents with memory keep it in the store, as on a node.
func UseRuntimeWith(e *Env, opts runtime.RuntimeOptions) {
	t := e.T
	opts.AllowPrivate, opts.Timeout = true, 10*time.Second
	rt := runtime.NewRuntime(func(ctx context.Context, id string) (agent.Backend, error) {
		b, err := e.Store.GetBackend(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return agent.Backend{}, fmt.Errorf("%w: %s", agent.ErrUnknownAgent, id)
		}
		return b, err
	}, opts)
	t.Cleanup(func() { _ = rt.Close() })
	e.Server.Chat.Local = rt
	rt.Delegator = e.Server.Chat
	rt.Memory = chat.Memories{Store: e.Store}
}

// seedEcho registers a local agent with the echo builtin and returns its id.
func (e *Env) SeedEcho(name, display string) string {
	e.T.Helper()
	return e.SeedAgent("", SimpleInput(name, display, "demo")).Record.ID
}

// wsDial opens the chat WebSocket with env's cookies (visit a chat page
// first) and an Origin header.
func (e *Env) WSDial(origin string) (*websocket.Conn, *http.Response, error) {
	e.T.Helper()
	d := websocket.Dialer{Jar: e.Client.Jar, HandshakeTimeout: 5 * time.Second}
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	c, resp, err := d.DialContext(e.T.Context(), "ws"+strings.TrimPrefix(e.TS.URL, "http")+"/api/v1/chat", h)
	if c != nil {
		e.T.Cleanup(func() { _ = c.Close() })
	}
	return c, resp, err
}

func (e *Env) MustDial() *websocket.Conn {
	e.T.Helper()
	c, resp, err := e.WSDial(e.TS.URL)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.T.Fatalf("dial chat: %v (status %d)", err, status)
	}
	return c
}
