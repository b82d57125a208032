package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/handlers/apiwire"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/store/postgres"
	"github.com/agentsite/agentsite/store/postgres/pgtest"
)

// stallTimeout is the store deadline of the stall tests. The store stays
// frozen, so a request answered at all (before the client's 20 s) was
// refused by that deadline: how fast it came depends on the machine.
const stallTimeout = 300 * time.Millisecond

// stallEnv is a portal on Postgres reached through a proxy the test can
// freeze and cut; direct reaches the same database around the proxy.
type stallEnv struct {
	*Env
	proxy  *pgtest.Proxy
	direct *postgres.DB
}

func newStallEnv(t *testing.T) *stallEnv {
	t.Helper()
	u := pgtest.NewDatabase(t)
	proxy := pgtest.NewProxy(t, u)
	discard := slog.New(slog.DiscardHandler)
	viaProxy, err := postgres.OpenWith(t.Context(), proxy.URL(), discard, store.Options{Timeout: stallTimeout})
	if err != nil {
		t.Fatalf("open store through the proxy: %v", err)
	}
	t.Cleanup(func() { viaProxy.Close() })
	direct, err := postgres.Open(t.Context(), u, discard)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { direct.Close() })
	env := NewWith(t, viaProxy)
	return &stallEnv{Env: env, proxy: proxy, direct: direct}
}

// send is do with a client deadline, so a hanging server fails the test
// instead of stalling it; it reports how long the answer took.
func (e *stallEnv) send(method, path string, body any, headers ...string) (*http.Response, time.Duration) {
	e.T.Helper()
	return e.sendWith(e.Client, method, path, body, headers...)
}

func (e *stallEnv) sendWith(c *http.Client, method, path string, body any, headers ...string) (*http.Response, time.Duration) {
	e.T.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.T.Fatal(err)
		}
		rd = strings.NewReader(string(b))
	}
	ctx, cancel := context.WithTimeout(e.T.Context(), 20*time.Second)
	e.T.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, method, e.TS.URL+path, rd)
	if err != nil {
		e.T.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		e.T.Fatalf("%s %s: no answer within 20s (the store call has no deadline?): %v", method, path, err)
	}
	e.T.Cleanup(func() { resp.Body.Close() })
	return resp, time.Since(start)
}

// wantUnavailable checks the answer to a request made while the store was
// unreachable: 503 and Retry-After (which only the store's refusal sends).
func wantUnavailable(t *testing.T, resp *http.Response, took time.Duration) {
	t.Helper()
	t.Logf("%s %s refused after %v", resp.Request.Method, resp.Request.URL.Path, took)
	if resp.StatusCode != http.StatusServiceUnavailable {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: status %d, want 503; body: %.500s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, body)
	}
	if got := resp.Header.Get("Retry-After"); got == "" {
		t.Errorf("%s: no Retry-After header", resp.Request.URL.Path)
	}
}

// agentID is the id the node gives an agent named name.
func (e *stallEnv) agentID(name string) string {
	e.T.Helper()
	id, err := e.Server.Registry.Publisher.AgentID(name)
	if err != nil {
		e.T.Fatal(err)
	}
	return id
}

// TestStoreStallRefusesAndRecovers: while Postgres is frozen or gone, a
// registration is refused fast with 503 + Retry-After (JSON on the API, a
// page in the portal, with or without a session); once it is back the node
// answers again without a restart, the refused registration was never
// stored, and a retry is. "commit" freezes exactly when the registration's
// COMMIT is on its way: the store gives up, and the late COMMIT must not
// land.
func TestStoreStallRefusesAndRecovers(t *testing.T) {
	for _, mode := range []string{"freeze", "cut", "commit"} {
		t.Run(mode, func(t *testing.T) {
			e := newStallEnv(t)
			e.Signup("carol", "correct horse battery")
			op := Bearer(OperatorToken)
			switch mode {
			case "freeze":
				e.proxy.Freeze()
			case "cut":
				e.proxy.Cut()
			case "commit":
				e.proxy.FreezeOn("commit\x00")
			}

			resp, took := e.send("POST", "/api/v1/agents", WeatherInput("refused-bot"), op...)
			wantUnavailable(t, resp, took)
			if got := Decode[httpkit.ErrorBody](t, resp).Error.Code; got != "store_unavailable" {
				t.Errorf("API error code = %q, want store_unavailable", got)
			}
			if mode != "commit" { // the portal reads nothing that commits
				// carol's session must be loaded from the store; a
				// visitor's page needs the store for its content only.
				for who, c := range map[string]*http.Client{"visitor": http.DefaultClient, "carol": e.Client} {
					resp, took = e.sendWith(c, "GET", "/", nil)
					wantUnavailable(t, resp, took)
					doc := ParsePage(t, resp, http.StatusServiceUnavailable)
					if doc.Find(`[data-testid="error-page"][data-status="503"]`).Length() != 1 {
						t.Errorf("%s: GET / is not the 503 error page: %s", who, pageText(doc))
					}
				}
			}

			e.proxy.Restore()
			e.proxy.WaitHeldClosed(t, 30*time.Second) // pgx closes a cancelled connection in the background; slow on a loaded machine
			if _, err := e.direct.GetAgent(t.Context(), e.agentID("refused-bot")); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("the refused registration: GetAgent = %v, want not found (refused, yet stored)", err)
			}
			// Back without a restart: a retry is stored and acknowledged.
			resp, _ = e.send("POST", "/api/v1/agents", WeatherInput("refused-bot"), op...)
			WantStatus(t, resp, http.StatusCreated)
			if _, err := e.direct.GetAgent(t.Context(), e.agentID("refused-bot")); err != nil {
				t.Fatalf("the retried registration is not stored: %v", err)
			}
			resp, _ = e.send("GET", "/", nil)
			WantStatus(t, resp, http.StatusOK)
		})
	}
}

func pageText(doc *goquery.Document) string {
	return strings.Join(strings.Fields(doc.Find("main").Text()), " ")
}

// TestSessionSaveStallRendersErrorPage: the store stalls after a page has
// loaded the session and before it saves it (the freeze is set off by the
// session's data, which only a save sends). The visitor gets the 503 page,
// alone: not scs's bare-text 500, not glued in front of the page the
// handler rendered.
func TestSessionSaveStallRendersErrorPage(t *testing.T) {
	e := newStallEnv(t)
	e.Signup("dave", "correct horse battery")
	e.proxy.FreezeOn("user_id") // the session key of the logged-in account
	resp, took := e.send("GET", "/", nil)
	wantUnavailable(t, resp, took)
	doc := ParsePage(t, resp, http.StatusServiceUnavailable)
	if doc.Find(`[data-testid="error-page"][data-status="503"]`).Length() != 1 || doc.Find("main").Length() != 1 {
		t.Errorf("GET / is not just the 503 error page: %s", pageText(doc))
	}
	e.proxy.Restore()
	resp, _ = e.send("GET", "/", nil)
	WantStatus(t, resp, http.StatusOK)
}

// failReadBack is a store whose GetAgent fails once a record was stored.
type failReadBack struct {
	store.Store
	stored bool
}

func (f *failReadBack) UpsertRecord(ctx context.Context, l store.Listing) error {
	err := f.Store.UpsertRecord(ctx, l)
	f.stored = err == nil
	return err
}

func (f *failReadBack) GetAgent(ctx context.Context, id string) (store.Listing, error) {
	if f.stored {
		return store.Listing{}, fmt.Errorf("read back: %w", store.ErrUnavailable)
	}
	return f.Store.GetAgent(ctx, id)
}

// TestStoredRegistrationIsAcknowledged: once the record is stored, the
// store failing on the read-back must not turn the registration into an
// error (it would be refused and stored).
func TestStoredRegistrationIsAcknowledged(t *testing.T) {
	e := NewWith(t, &failReadBack{Store: OpenSQLite(t)})
	resp := e.Do("POST", "/api/v1/agents", WeatherInput("kept-bot"), Bearer(OperatorToken)...)
	WantStatus(t, resp, http.StatusCreated)
	if got := Decode[apiwire.Agent](t, resp); got.Name != "kept-bot" || got.Status != store.StatusOnline || !got.Local {
		t.Errorf("acknowledged agent = %+v", got)
	}
}
