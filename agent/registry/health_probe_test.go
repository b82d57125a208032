package registry_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/registry/registrytest"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/store"
)

// Modes of a flaky backend.
const (
	modeUp = iota
	modeDown
	modeSlow
)

// Slowness in the probe tests: a slow backend takes slowDelay per request
// on the test's clock, over the tracker's slowAfter; a fast one takes no
// time on it at all. The runtime measures probes on that clock, so how
// fast the machine is does not matter.
const (
	slowAfter = 500 * time.Millisecond
	slowDelay = 700 * time.Millisecond
)

// flaky serves next while up, 503 while down, and next while slow, after
// moving clock on by slowDelay (clock must be set for modeSlow).
type flaky struct {
	mode  atomic.Int32
	next  http.Handler
	clock *registrytest.Clock
}

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch f.mode.Load() {
	case modeDown:
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	case modeSlow:
		f.clock.Add(slowDelay)
	}
	f.next.ServeHTTP(w, r)
}

// fakeBackend starts a fake backend of kind behind a flaky switch.
func fakeBackend(t *testing.T, kind string) (*flaky, agent.Backend) {
	t.Helper()
	f := &flaky{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	switch kind {
	case agent.BackendLLM:
		f.next = &fakellm.Server{Model: "m1"}
		return f, agent.Backend{Kind: kind, URL: srv.URL + "/v1", Model: "m1", APIKey: "sk-test-0123456789"}
	case agent.BackendMCP:
		s := server.NewMCPServer("test", "1.0.0")
		s.AddTool(mcp.NewTool("shout", mcp.WithString("text")), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("OK"), nil
		})
		f.next = server.NewStreamableHTTPServer(s)
		return f, agent.Backend{Kind: kind, URL: srv.URL + "/mcp", Tool: "shout"}
	case agent.BackendWebhook:
		f.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				w.WriteHeader(http.StatusMethodNotAllowed) // a webhook that handles POST only is up
				return
			}
			fmt.Fprint(w, `{"reply":"pong"}`)
		})
		return f, agent.Backend{Kind: kind, URL: srv.URL + "/hook"}
	case agent.BackendA2A:
		f.next = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"name":"Echo","url":%q,"preferredTransport":"JSONRPC","version":"1","protocolVersion":"0.3.0"}`, srv.URL+"/rpc")
		})
		return f, agent.Backend{Kind: kind, URL: srv.URL + "/card.json"}
	}
	t.Fatalf("no fake for %s", kind)
	return nil, agent.Backend{}
}

// agents is a ProbeStore of local agents with their backends.
type agents struct {
	mu       sync.Mutex
	backends map[string]agent.Backend
}

func (a *agents) ListLocal(context.Context) ([]store.Listing, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]store.Listing, 0, len(a.backends))
	for id := range a.backends {
		out = append(out, store.Listing{Record: agent.Record{ID: id}, Local: true})
	}
	return out, nil
}

func (a *agents) LocalRefs(_ context.Context, q store.LocalQuery) ([]store.LocalRef, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := []store.LocalRef{}
	for id, b := range a.backends {
		if id > q.After {
			out = append(out, store.LocalRef{ID: id, Kind: b.Kind})
		}
	}
	slices.SortFunc(out, func(x, y store.LocalRef) int { return strings.Compare(x.ID, y.ID) })
	return out[:min(len(out), q.PageLimit())], nil
}

func (a *agents) GetBackend(_ context.Context, id string) (agent.Backend, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.backends[id]
	if !ok {
		return b, store.ErrNotFound
	}
	return b, nil
}

// newRuntime is an agent runtime that may call loopback backends.
func newRuntime(t testing.TB) *runtime.Runtime {
	return newRuntimeOn(t, nil)
}

// newRuntimeOn is newRuntime measuring probes on now (nil: time.Now).
func newRuntimeOn(t testing.TB, now func() time.Time) *runtime.Runtime {
	rt := runtime.NewRuntime(func(context.Context, string) (agent.Backend, error) {
		return agent.Backend{}, agent.ErrUnknownAgent
	}, runtime.RuntimeOptions{AllowPrivate: true, Now: now})
	t.Cleanup(func() { rt.Close() })
	return rt
}

// TestProbeStates: for each backend kind, a backend that is up, then
// down, then slow, then up again moves its agent healthy → failing →
// degraded → healthy, after the expected number of probes (one a minute
// on the tracker's clock; the state judges the last 5 minutes). Probe
// latencies are measured on that clock too: a slow backend takes
// slowDelay on it, a fast one nothing.
func TestProbeStates(t *testing.T) {
	type step struct {
		mode   int32
		probes int
		want   []string // the state after each probe
	}
	H, D, F := agent.HealthHealthy, agent.HealthDegraded, agent.HealthFailing
	steps := []step{
		{modeUp, 1, []string{H}},
		{modeDown, 3, []string{D, D, F}},  // failing at the third failure in a row
		{modeSlow, 1, []string{D}},        // answering again, slowly, failures recent
		{modeUp, 4, []string{D, D, D, H}}, // healthy once the failures are 5 minutes old
	}
	for _, kind := range []string{agent.BackendLLM, agent.BackendMCP, agent.BackendWebhook, agent.BackendA2A} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f, b := fakeBackend(t, kind)
			clock := registrytest.NewClock()
			f.clock = clock
			h := registry.NewHealth(registry.HealthOptions{SlowAfter: slowAfter, Recent: 5 * time.Minute, Now: clock.Now})
			p := &registry.Prober{Store: &agents{backends: map[string]agent.Backend{"a1": b}}, Runtime: newRuntimeOn(t, clock.Now), Health: h}
			n := 0
			for _, s := range steps {
				f.mode.Store(s.mode)
				for i := range s.probes {
					n++
					res, err := p.ProbeAgent(t.Context(), "a1")
					if err != nil {
						t.Fatal(err)
					}
					if slow := res.Latency > slowAfter; slow != (s.mode == modeSlow) {
						t.Fatalf("probe %d (mode %d): latency %s on the test's clock", n, s.mode, res.Latency)
					}
					if got := h.Summary("a1").State; got != s.want[i] {
						t.Fatalf("probe %d (mode %d): %s, want %s (probe: ok=%t %s %q)", n, s.mode, got, s.want[i], res.OK, res.Latency, res.Message())
					}
					if msg := h.LastError("a1"); s.mode == modeDown && !strings.Contains(msg, "HTTP 503 Service Unavailable from the") {
						t.Fatalf("probe %d: LastError %q, want the 503 in words", n, msg)
					}
					clock.Add(time.Minute)
				}
			}
			if msg := h.LastError("a1"); msg != "" {
				t.Fatalf("LastError after a good probe: %q", msg)
			}
		})
	}
}
