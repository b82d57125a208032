package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"

	"github.com/agentsite/agentsite/agent"
)

func TestA2ACardFailures(t *testing.T) {
	big := a2aTestCard("https://agent.example.com/rpc", true)
	big.Description = strings.Repeat("x", maxA2ACardBytes)
	grpcOnly := a2aTestCard("https://agent.example.com/grpc", true)
	grpcOnly.PreferredTransport = a2a.TransportProtocolGRPC
	for _, tc := range []struct {
		name   string
		status int
		body   any
		kind   error
		public string
	}{
		{"404", http.StatusNotFound, "no such page", agent.ErrBackendRejected, "could not fetch the agent card (HTTP 404 Not Found)"},
		{"503", http.StatusServiceUnavailable, "down", agent.ErrBackendUnavailable, "could not fetch the agent card (HTTP 503 Service Unavailable from the backend)"},
		{"bad JSON", http.StatusOK, "<html>not a card</html>", agent.ErrBadBackendReply, "the agent card is not valid JSON"},
		{"oversized", http.StatusOK, big, agent.ErrReplyTooLarge, "the agent card exceeds 64 KiB"},
		{"no JSON-RPC", http.StatusOK, grpcOnly, agent.ErrBackendRejected, "the agent card offers no JSON-RPC or HTTP+JSON interface, only GRPC"},
		{"no url", http.StatusOK, a2aTestCard("", true), agent.ErrBackendRejected, "the agent card offers no JSON-RPC or HTTP+JSON interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				if s, ok := tc.body.(string); ok {
					io.WriteString(w, s)
					return
				}
				json.NewEncoder(w).Encode(tc.body)
			}))
			defer srv.Close()
			rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/card.json"}, RuntimeOptions{})
			_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
			if !errors.Is(err, tc.kind) || PublicMessage(err) != tc.public {
				t.Fatalf("got %v (public %q), want %v with %q", err, PublicMessage(err), tc.kind, tc.public)
			}
			if _, perr := rt.ProbeA2A(context.Background(), srv.URL+"/card.json"); !errors.Is(perr, tc.kind) {
				t.Fatalf("ProbeA2A: %v, want %v", perr, tc.kind)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		srv.Close()
		rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/card.json"}, RuntimeOptions{})
		if _, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil); !errors.Is(err, agent.ErrBackendUnavailable) {
			t.Fatalf("got %v, want ErrBackendUnavailable", err)
		}
	})
}

// TestA2ARefusesPrivateCard: without --allow-private-endpoints a card on
// loopback is refused when the client dials, before any connection.
func TestA2ARefusesPrivateCard(t *testing.T) {
	port, accepted := countingListener(t)
	b := agent.Backend{Kind: agent.BackendA2A, URL: "http://127.0.0.1:" + port + "/.well-known/agent-card.json"}
	rt := NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil }, RuntimeOptions{Timeout: 5 * time.Second})
	defer rt.Close()
	if _, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil); !errors.Is(err, agent.ErrBlockedAddress) {
		t.Fatalf("got %v, want ErrBlockedAddress", err)
	}
	if _, err := rt.ProbeA2A(context.Background(), b.URL); !errors.Is(err, agent.ErrBlockedAddress) {
		t.Fatalf("ProbeA2A: %v, want ErrBlockedAddress", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("listener accepted %d connections", n)
	}
}

// cardHost serves one host's requests in memory (a card "on the
// internet") and sends the rest through next.
type cardHost struct {
	host string
	h    http.Handler
	next http.RoundTripper
}

func (c cardHost) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != c.host {
		return c.next.RoundTrip(req)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// TestA2ARefusesCardPointingAtLoopback: a public card whose JSON-RPC url
// leads to loopback is refused: a literal address or plain http when the
// card is read, a name that resolves to loopback when the client dials.
func TestA2ARefusesCardPointingAtLoopback(t *testing.T) {
	port, accepted := countingListener(t)
	for _, tc := range []struct{ endpoint, public string }{
		{"https://rebind.example.test:" + port + "/rpc", "the backend address is not a public one"}, // the dial guard
		{"https://127.0.0.1:" + port + "/rpc", "the agent card's url is not a public address"},
		{"https://localhost:" + port + "/rpc", "the agent card's url is not a public address"},
		{"http://rebind.example.test:" + port + "/rpc", "the agent card's url does not use https"},
	} {
		t.Run(tc.endpoint, func(t *testing.T) {
			b := agent.Backend{Kind: agent.BackendA2A, URL: "https://card.example.test/.well-known/agent-card.json"}
			rt := NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil }, RuntimeOptions{Timeout: 5 * time.Second})
			defer rt.Close()
			guarded := NewGuardedClientWithOptions(GuardOptions{Timeout: 5 * time.Second, Resolver: fakeResolver(t, netip.MustParseAddr("127.0.0.1"))})
			guarded.Transport = cardHost{host: "card.example.test", h: a2asrv.NewStaticAgentCardHandler(a2aTestCard(tc.endpoint, true)), next: guarded.Transport}
			rt.client = guarded
			_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
			if !errors.Is(err, agent.ErrBlockedAddress) || PublicMessage(err) != tc.public {
				t.Fatalf("got %v (public %q), want ErrBlockedAddress: %s", err, PublicMessage(err), tc.public)
			}
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("listener accepted %d connections", n)
	}
}

func TestA2AEndpointErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		kind   error
		public string
	}{
		{"invalid params", 200, `{"jsonrpc":"2.0","id":"1","error":{"code":-32602,"message":"bad params"}}`, agent.ErrBackendRejected, "the agent refused the message"},
		{"internal error", 200, `{"jsonrpc":"2.0","id":"1","error":{"code":-32603,"message":"boom"}}`, agent.ErrBackendUnavailable, "the agent failed"},
		{"not JSON-RPC", 200, `<html></html>`, agent.ErrBadBackendReply, "the backend's reply could not be read"},
		{"not an A2A result", 200, `{"jsonrpc":"2.0","id":"1","result":{"kind":"poem"}}`, agent.ErrBadBackendReply, "the backend's reply could not be read"},
		{"unauthorized", 401, `{}`, agent.ErrBackendRejected, "HTTP 401 Unauthorized"},
		{"no text", 200, `{"jsonrpc":"2.0","id":"1","result":{"kind":"message","messageId":"m","role":"agent","parts":[]}}`, agent.ErrBadBackendReply, "the agent's reply has no text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			srv := httptest.NewServer(mux)
			defer srv.Close()
			mux.Handle("/card.json", a2asrv.NewStaticAgentCardHandler(a2aTestCard(srv.URL+"/rpc", false)))
			mux.HandleFunc("/rpc", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			rt := newTestRuntime(t, agent.Backend{Kind: agent.BackendA2A, URL: srv.URL + "/card.json"}, RuntimeOptions{})
			_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
			if !errors.Is(err, tc.kind) || PublicMessage(err) != tc.public {
				t.Fatalf("got %v (public %q), want %v with %q", err, PublicMessage(err), tc.kind, tc.public)
			}
		})
	}
}
