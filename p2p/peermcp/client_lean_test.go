package peermcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/mcpkit/mcpstream"
)

// httpNet reaches every host at one plain-HTTP test server.
type httpNet struct{ srv *httptest.Server }

func (httpNet) ConnectHost(context.Context, string) error { return nil }

func (httpNet) SpeaksMCPLines(string) bool { return false }

func (httpNet) OpenMCPLines(context.Context, string) (network.Stream, error) {
	return nil, errors.New("httpNet speaks HTTP alone")
}

func (n httpNet) MCPClient(string) (*http.Client, error) {
	target, _ := url.Parse(n.srv.URL)
	return &http.Client{Transport: rewriteHost{to: target.Host}}, nil
}

// rewriteHost sends every request to one address.
type rewriteHost struct{ to string }

func (r rewriteHost) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host = r.to
	return http.DefaultTransport.RoundTrip(req)
}

// TestLeanCallWithEitherHost: a turn sent as a lean call, or through
// mcp-go's client as older nodes send it, streams and answers the same
// with a host that answers on its fast path and with one that serves
// everything through mcp-go's server (an older node); a host's refusal
// maps back the same way.
func TestLeanCallWithEitherHost(t *testing.T) {
	h := newTestHost(t)
	fast := NewHandler(h.cfg)
	g := fast.(guard)
	older := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { g.next.ServeHTTP(mcpstream.CountFlushes(w, r)) })
	for hostName, host := range map[string]http.Handler{"fast path": fast, "mcp-go only": older} {
		srv := httptest.NewServer(host)
		for _, lean := range []bool{true, false} {
			c := NewClient(httpNet{srv}, ClientConfig{Version: "test", noLean: !lean})
			var chunks []string
			reply, err := c.Send(t.Context(), "host", agent.Turn{AgentID: h.echo, Text: "hello there you", Trace: agent.NewTrace()}, func(s string) error {
				chunks = append(chunks, s)
				return nil
			})
			if err != nil || reply != "hello there you" || strings.Join(chunks, "") != reply {
				t.Errorf("%s, lean %v: Send = %q, %v; streamed %q", hostName, lean, reply, err, chunks)
			}
			_, err = c.Send(t.Context(), "host", agent.Turn{AgentID: h.missing, Text: "x"}, nil)
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != agent.CodeUnknownAgent {
				t.Errorf("%s, lean %v: Send to a missing agent = %v, want %s", hostName, lean, err, agent.CodeUnknownAgent)
			}
			cn, release, err := c.pool.Acquire(t.Context(), "host", nil)
			if err != nil {
				t.Fatal(err)
			}
			if cn.lean != lean {
				t.Errorf("%s: the pooled client's lean = %v, want %v", hostName, cn.lean, lean)
			}
			release(false)
			_ = c.Close()
		}
		srv.Close()
	}
}
