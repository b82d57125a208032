package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/agentsite/agentsite/agent"
)

// fakeResolver answers every A query with addr, as a DNS server controlled
// by an attacker would ("DNS rebinding"), from a UDP socket on loopback.
func fakeResolver(t *testing.T, addr netip.Addr) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RecursionAvailable: true})
			_ = b.StartQuestions()
			_ = b.Question(q)
			_ = b.StartAnswers()
			if q.Type == dnsmessage.TypeA && addr.Is4() {
				_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: addr.As4()})
			}
			msg, err := b.Finish()
			if err == nil {
				_, _ = pc.WriteTo(msg, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// countingListener counts the connections that reach it.
func countingListener(t *testing.T) (port string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	_, port, _ = net.SplitHostPort(ln.Addr().String())
	return port, accepted
}

func TestGuardedClientRefusesNonPublic(t *testing.T) {
	port, accepted := countingListener(t)
	client := NewGuardedClientWithOptions(GuardOptions{Timeout: 5 * time.Second, Resolver: fakeResolver(t, netip.MustParseAddr("127.0.0.1"))})
	for _, u := range []string{
		"http://127.0.0.1:" + port + "/",
		"http://localhost:" + port + "/",
		"http://rebind.example.test:" + port + "/", // a public-looking name resolving to loopback
		"http://[::ffff:127.0.0.1]:" + port + "/",
		"http://10.0.0.1:" + port + "/",
		"http://169.254.169.254/latest/meta-data/",
		"http://0.0.0.0:" + port + "/",
		"http://[::127.0.0.1]:" + port + "/",   // IPv4-compatible
		"http://[2002:7f00:1::]:" + port + "/", // 6to4 of 127.0.0.1
		"http://[64:ff9b::7f00:1]:" + port + "/",
		"http://[2001::1]:" + port + "/", // Teredo
		"http://[fec0::1]:" + port + "/", // site-local
	} {
		t.Run(u, func(t *testing.T) {
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("GET %s succeeded", u)
			}
			if !errors.Is(err, agent.ErrBlockedAddress) {
				t.Fatalf("GET %s: %v, want ErrBlockedAddress", u, err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let a stray accept show up
	if n := accepted.Load(); n != 0 {
		t.Fatalf("listener accepted %d connections; the guard must refuse before connecting", n)
	}
}

func TestGuardedClientAllowPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	resp, err := NewGuardedClient(true, 5*time.Second).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
}

// TestGuardedClientAllowPrivateRefusesSpecial: --allow-private-endpoints
// opens the operator's networks, not addresses no backend lives at; 0.0.0.0
// would otherwise connect to this host.
func TestGuardedClientAllowPrivateRefusesSpecial(t *testing.T) {
	port, accepted := countingListener(t)
	client := NewGuardedClient(true, 5*time.Second)
	for _, u := range []string{
		"http://0.0.0.0:" + port + "/",
		"http://[::]:" + port + "/",
		"http://[::127.0.0.1]:" + port + "/",
		"http://224.0.0.1:" + port + "/",
		"http://255.255.255.255:" + port + "/",
	} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s succeeded", u)
		}
		if !errors.Is(err, agent.ErrBlockedAddress) {
			t.Errorf("GET %s: %v, want ErrBlockedAddress", u, err)
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("listener accepted %d connections", n)
	}
}

func TestGuardedClientIgnoresProxyEnvironment(t *testing.T) {
	tr := NewGuardedClient(false, time.Second).Transport.(*http.Transport)
	if tr.Proxy != nil {
		t.Fatal("the guarded transport must not use a proxy: the proxy would dial past the guard")
	}
}

func TestGuardedClientRedirects(t *testing.T) {
	var hops atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/loop/{n}", func(w http.ResponseWriter, r *http.Request) {
		hops.Add(1)
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		http.Redirect(w, r, fmt.Sprintf("/loop/%d", n+1), http.StatusFound)
	})
	mux.HandleFunc("/ok/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n < 3 {
			http.Redirect(w, r, fmt.Sprintf("/ok/%d", n+1), http.StatusFound)
			return
		}
		io.WriteString(w, "arrived")
	})
	mux.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	client := NewGuardedClient(true, 5*time.Second)

	resp, err := client.Get(srv.URL + "/ok/0")
	if err != nil {
		t.Fatalf("3 redirects: %v", err)
	}
	resp.Body.Close()

	if _, err := client.Get(srv.URL + "/loop/0"); !errors.Is(err, agent.ErrBadBackendReply) {
		t.Fatalf("redirect loop: %v, want ErrBadBackendReply", err)
	}
	if n := hops.Load(); n != maxRedirects+1 {
		t.Fatalf("followed %d hops, want %d", n, maxRedirects+1)
	}
	if _, err := client.Get(srv.URL + "/file"); !errors.Is(err, agent.ErrBlockedAddress) {
		t.Fatalf("redirect to file: %v, want ErrBlockedAddress", err)
	}
}

func TestRuntimeRefusesPrivateBackend(t *testing.T) {
	port, accepted := countingListener(t)
	for _, kind := range []string{agent.BackendLLM, agent.BackendWebhook, agent.BackendMCP} {
		t.Run(kind, func(t *testing.T) {
			b := agent.Backend{Kind: kind, URL: "http://127.0.0.1:" + port + "/v1", Model: "m", Tool: "shout", APIKey: "sk-test-NEVERSHOWN"}
			rt := NewRuntime(func(context.Context, string) (agent.Backend, error) { return b, nil }, RuntimeOptions{Timeout: 5 * time.Second})
			defer rt.Close()
			_, err := rt.Answer(context.Background(), agent.Turn{AgentID: "a", Text: "hi"}, nil)
			if !errors.Is(err, agent.ErrBlockedAddress) {
				t.Fatalf("got %v, want ErrBlockedAddress", err)
			}
			if strings.Contains(err.Error(), b.APIKey) {
				t.Fatalf("error shows the key: %v", err)
			}
		})
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("listener accepted %d connections", n)
	}
}

func TestCapReader(t *testing.T) {
	b, err := io.ReadAll(newCapReader(strings.NewReader("12345"), 5, nil))
	if err != nil || string(b) != "12345" {
		t.Fatalf("exactly at the limit: %q, %v", b, err)
	}
	hit := false
	_, err = io.ReadAll(newCapReader(strings.NewReader("123456"), 5, func() { hit = true }))
	if !errors.Is(err, agent.ErrReplyTooLarge) || !hit {
		t.Fatalf("over the limit: %v (hit %v), want ErrReplyTooLarge", err, hit)
	}
}
