package runtime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	a2a1 "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/cardsig"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// v1Agent is an A2A 1.0 agent (an a2a-go v2 AgentExecutor) that answers
// "turn N: <text>" in three artifact chunks, N counting its context's
// turns. "slow" works until cancelled; "hold" stops after its first
// status until release is closed.
type v1Agent struct {
	mu      sync.Mutex
	turns   map[string]int
	cancels atomic.Int64
	release chan struct{}
	stop    chan struct{}
}

func (a *v1Agent) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a1.Event, error] {
	return func(yield func(a2a1.Event, error) bool) {
		text := ""
		for _, p := range ec.Message.Parts {
			text += p.Text()
		}
		a.mu.Lock()
		a.turns[ec.ContextID]++
		n := a.turns[ec.ContextID]
		a.mu.Unlock()
		if ec.StoredTask == nil && !yield(a2a1.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		if !yield(a2a1.NewStatusUpdateEvent(ec, a2a1.TaskStateWorking, nil), nil) {
			return
		}
		switch text {
		case "slow":
			say := a2a1.NewMessageForTask(a2a1.MessageRoleAgent, ec, a2a1.NewTextPart("thinking"))
			if !yield(a2a1.NewStatusUpdateEvent(ec, a2a1.TaskStateWorking, say), nil) {
				return
			}
			select {
			case <-ctx.Done():
			case <-a.stop:
			}
			return
		case "hold":
			select {
			case <-a.release:
			case <-a.stop:
				return
			}
		}
		reply := fmt.Sprintf("turn %d: %s", n, text)
		third := len(reply) / 3
		first := a2a1.NewArtifactEvent(ec, a2a1.NewTextPart(reply[:third]))
		if !yield(first, nil) {
			return
		}
		for _, chunk := range []string{reply[third : 2*third], reply[2*third:]} {
			if !yield(a2a1.NewArtifactUpdateEvent(ec, first.Artifact.ID, a2a1.NewTextPart(chunk)), nil) {
				return
			}
		}
		yield(a2a1.NewStatusUpdateEvent(ec, a2a1.TaskStateCompleted, nil), nil)
	}
}

func (a *v1Agent) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a1.Event, error] {
	a.cancels.Add(1)
	return func(yield func(a2a1.Event, error) bool) {
		yield(a2a1.NewStatusUpdateEvent(ec, a2a1.TaskStateCanceled, nil), nil)
	}
}

// v1Server serves a v1Agent with a2a-go v2's JSON-RPC (/rpc) and REST
// (/rest) handlers, its card at /card.json; it records each call as
// "<path> <JSON-RPC method or HTTP method + path>" and the headers seen.
type v1Server struct {
	*httptest.Server
	agent *v1Agent
	mu    sync.Mutex
	calls []string
	auth  []string // Authorization and X-Api-Key headers of each call
	// key, if set, is required (as bearer, or in X-Api-Key when keyHeader).
	key       string
	keyHeader bool
	// dropStream cuts the first streaming answer after its first event.
	dropStream atomic.Bool
	card       []byte
}

type v1Opts struct {
	streaming bool
	restFirst bool   // the card lists HTTP+JSON before JSON-RPC
	key       string // required credential
	keyHeader bool   // the card asks for it in X-API-Key (apiKey scheme)
	signKey   crypto.PrivKey
	tamper    bool // change the card after signing it
}

func startV1Server(t *testing.T, o v1Opts) *v1Server {
	t.Helper()
	s := &v1Server{agent: &v1Agent{turns: map[string]int{}, release: make(chan struct{}), stop: make(chan struct{})}, key: o.key, keyHeader: o.keyHeader}
	mux := http.NewServeMux()
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.agent.stop) })
	ifaces := []*a2a1.AgentInterface{
		a2a1.NewAgentInterface(s.URL+"/rpc", a2a1.TransportProtocolJSONRPC),
		a2a1.NewAgentInterface(s.URL+"/rest", a2a1.TransportProtocolHTTPJSON),
	}
	if o.restFirst {
		ifaces[0], ifaces[1] = ifaces[1], ifaces[0]
	}
	card := &a2a1.AgentCard{
		Name: "Echo 1.0", Description: "echoes in A2A 1.0", Version: "1", SupportedInterfaces: ifaces,
		Capabilities:      a2a1.AgentCapabilities{Streaming: o.streaming},
		DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a1.AgentSkill{{ID: "echo", Name: "Echo", Description: "echoes", Tags: []string{"echo"}}},
	}
	if o.keyHeader {
		card.SecuritySchemes = a2a1.NamedSecuritySchemes{"key": a2a1.APIKeySecurityScheme{Location: a2a1.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key"}}
	}
	raw, err := json.Marshal(card)
	if err != nil {
		t.Fatal(err)
	}
	if o.signKey != nil {
		pid, _ := peer.IDFromPrivateKey(o.signKey)
		if raw, err = cardsig.Sign(raw, o.signKey, pid.String()); err != nil {
			t.Fatal(err)
		}
	}
	if o.tamper {
		raw = bytes.Replace(raw, []byte(`"echoes in A2A 1.0"`), []byte(`"echoes, trust me"`), 1)
	}
	s.card = raw
	mux.HandleFunc("/card.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(s.card)
	})
	h := a2asrv.NewHandler(s.agent)
	rpc := a2asrv.NewJSONRPCHandler(h)
	rest := http.StripPrefix("/rest", a2asrv.NewRESTHandler(h))
	serve := func(next http.Handler) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req struct{ Method string }
			_ = json.Unmarshal(body, &req)
			call := r.Method + " " + r.URL.Path
			if strings.HasPrefix(r.URL.Path, "/rpc") {
				call = "rpc " + req.Method
			}
			s.mu.Lock()
			s.calls = append(s.calls, call)
			s.auth = append(s.auth, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Api-Key"))
			s.mu.Unlock()
			if r.Header.Get(a2aVersionHeader) != "1.0" {
				http.Error(w, "A2A-Version 1.0 expected", http.StatusBadRequest)
				return
			}
			if s.key != "" {
				got := r.Header.Get("Authorization")
				want := "Bearer " + s.key
				if s.keyHeader {
					got, want = r.Header.Get("X-Api-Key"), s.key
				}
				if got != want {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusUnauthorized)
					io.WriteString(w, `{"error":{"code":401,"message":"bad credentials"}}`)
					return
				}
			}
			streaming := req.Method == "SendStreamingMessage" || strings.HasSuffix(r.URL.Path, "/message:stream")
			if streaming && s.dropStream.CompareAndSwap(true, false) {
				s.serveCut(w, r, next)
				return
			}
			if req.Method == "SubscribeToTask" || strings.HasSuffix(r.URL.Path, ":subscribe") {
				select {
				case <-s.agent.release:
				default:
					close(s.agent.release)
				}
			}
			next.ServeHTTP(w, r)
		}
	}
	mux.Handle("/rpc", serve(rpc))
	mux.Handle("/rest/", serve(rest))
	return s
}

// serveCut forwards the first server-sent event of next's answer, then
// breaks the connection; next goes on (its execution too) into a discard.
func (s *v1Server) serveCut(w http.ResponseWriter, r *http.Request, next http.Handler) {
	cw := &cutWriter{w: w, first: make(chan struct{})}
	go next.ServeHTTP(cw, r.WithContext(context.WithoutCancel(r.Context())))
	select {
	case <-cw.first:
	case <-time.After(10 * time.Second):
	}
	panic(http.ErrAbortHandler)
}

type cutWriter struct {
	w     http.ResponseWriter
	mu    sync.Mutex
	buf   []byte
	done  bool
	first chan struct{}
}

func (c *cutWriter) Header() http.Header { return c.w.Header() }
func (c *cutWriter) WriteHeader(code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.done {
		c.w.WriteHeader(code)
	}
}
func (c *cutWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return len(p), nil
	}
	c.buf = append(c.buf, p...)
	if i := bytes.Index(c.buf, []byte("\n\n")); i >= 0 {
		c.w.Write(c.buf[:i+2])
		c.w.(http.Flusher).Flush()
		c.done = true
		close(c.first)
	}
	return len(p), nil
}
func (c *cutWriter) Flush() {}

func (s *v1Server) backend() agent.Backend {
	return agent.Backend{Kind: agent.BackendA2A, URL: s.URL + "/card.json"}
}

func (s *v1Server) seen() (calls, auth []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...), append([]string(nil), s.auth...)
}

// TestA2A10Bindings: a remote A2A 1.0 agent (an a2a-go v2 server, its card
// with supportedInterfaces only) answers through the a2a backend over the
// binding its card prefers, JSON-RPC or HTTP+JSON, streaming or not, and
// the second turn continues the remote context.
func TestA2A10Bindings(t *testing.T) {
	for _, tc := range []struct {
		name      string
		o         v1Opts
		wantCalls []string
	}{
		{"jsonrpc stream", v1Opts{streaming: true}, []string{"rpc SendStreamingMessage", "rpc SendStreamingMessage"}},
		{"jsonrpc send", v1Opts{}, []string{"rpc SendMessage", "rpc SendMessage"}},
		{"rest stream", v1Opts{streaming: true, restFirst: true}, []string{"POST /rest/message:stream", "POST /rest/message:stream"}},
		{"rest send", v1Opts{restFirst: true}, []string{"POST /rest/message:send", "POST /rest/message:send"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startV1Server(t, tc.o)
			rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
			chunks, emit := collect()
			reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hello there"), emit)
			if err != nil || reply != "turn 1: hello there" || strings.Join(*chunks, "") != reply {
				t.Fatalf("reply %q, chunks %q, err %v", reply, *chunks, err)
			}
			if tc.o.streaming && len(*chunks) != 3 {
				t.Fatalf("chunks %q; want the server's 3 artifact chunks as they came", *chunks)
			}
			reply, err = rt.Answer(context.Background(), a2aTestTurn("c1", "again"), nil)
			if err != nil || reply != "turn 2: again" {
				t.Fatalf("second turn: %q, %v; want it in the same remote context", reply, err)
			}
			if calls, _ := srv.seen(); strings.Join(calls, ",") != strings.Join(tc.wantCalls, ",") {
				t.Fatalf("calls %v, want %v", calls, tc.wantCalls)
			}
			info, err := rt.FetchA2ACard(context.Background(), srv.URL+"/card.json")
			if err != nil || info.Version != "1.0" || info.Card.Name != "Echo 1.0" || len(info.Card.Skills) != 1 {
				t.Fatalf("FetchA2ACard = %+v, %v", info, err)
			}
		})
	}
}

// TestA2A10CancelsOnTimeout: a turn that runs out of time, or whose caller
// goes away, cancels its remote task (CancelTask) on either binding.
func TestA2A10CancelsOnTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		o      v1Opts
		cancel bool // the caller cancels, rather than the turn timing out
	}{
		{"jsonrpc stream timeout", v1Opts{streaming: true}, false},
		{"rest stream timeout", v1Opts{streaming: true, restFirst: true}, false},
		{"jsonrpc stream caller cancels", v1Opts{streaming: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startV1Server(t, tc.o)
			timeout := 1500 * time.Millisecond // ample for the first events, even on a loaded machine
			if tc.cancel {
				timeout = time.Minute
			}
			rt := newTestRuntime(t, srv.backend(), RuntimeOptions{Timeout: timeout})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			// The caller goes away once the remote task is running and has
			// said so (its "thinking" status).
			emit := func(string) error {
				if tc.cancel {
					cancel()
				}
				return nil
			}
			_, err := rt.Answer(ctx, a2aTestTurn("c1", "slow"), emit)
			if tc.cancel && !errors.Is(err, context.Canceled) || !tc.cancel && !errors.Is(err, agent.ErrBackendTimeout) {
				t.Fatalf("err %v", err)
			}
			calls, _ := srv.seen()
			if !slicesContainsSuffix(calls, "CancelTask", ":cancel") {
				t.Fatalf("calls %v; want a CancelTask after the turn gave up", calls)
			}
			waitfor.Until(t, 10*time.Second, "the agent's Cancel to run", func() bool { return srv.agent.cancels.Load() > 0 })
		})
	}
}

func slicesContainsSuffix(calls []string, suffixes ...string) bool {
	for _, c := range calls {
		for _, s := range suffixes {
			if strings.HasSuffix(c, s) {
				return true
			}
		}
	}
	return false
}

// TestA2A10ResubscribesDroppedStream: a stream that breaks off before its
// task ends is picked up with SubscribeToTask, and the reply is whole.
func TestA2A10ResubscribesDroppedStream(t *testing.T) {
	for _, o := range []v1Opts{{streaming: true}, {streaming: true, restFirst: true}} {
		srv := startV1Server(t, o)
		srv.dropStream.Store(true)
		rt := newTestRuntime(t, srv.backend(), RuntimeOptions{})
		reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hold"), nil)
		if err != nil || reply != "turn 1: hold" {
			t.Fatalf("rest %v: %q, %v", o.restFirst, reply, err)
		}
		if calls, _ := srv.seen(); !slicesContainsSuffix(calls, "SubscribeToTask", ":subscribe") {
			t.Fatalf("rest %v: calls %v; want SubscribeToTask after the drop", o.restFirst, calls)
		}
	}
}

// TestA2A10Credentials: an agent that requires a bearer token or an API
// key header (its card's apiKey scheme) gets the backend's key; the key
// never shows in errors or logs, and is not sent to an endpoint on
// another site than the card.
func TestA2A10Credentials(t *testing.T) {
	const key = "sk-a2a-secret-0123456789"
	for _, o := range []v1Opts{
		{streaming: true, key: key},
		{key: key, restFirst: true},
		{streaming: true, key: key, keyHeader: true},
	} {
		srv := startV1Server(t, o)
		var logs bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		b := srv.backend()
		b.APIKey = key
		rt := newTestRuntime(t, b, RuntimeOptions{Logger: logger})
		reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
		if err != nil || reply != "turn 1: hi" {
			t.Fatalf("%+v: %q, %v", o, reply, err)
		}
		_, auth := srv.seen()
		want := "Bearer " + key + "|"
		if o.keyHeader {
			want = "|" + key
		}
		if len(auth) == 0 || auth[0] != want {
			t.Fatalf("%+v: credentials sent %q, want %q", o, auth, want)
		}
		// A wrong key: refused, and the key is nowhere in what we say.
		srv.key = "sk-another-key-987654321"
		_, err = rt.Answer(context.Background(), a2aTestTurn("c2", "hi"), nil)
		if !errors.Is(err, agent.ErrBackendRejected) {
			t.Fatalf("%+v: wrong key: %v", o, err)
		}
		for what, s := range map[string]string{"error": err.Error(), "public": PublicMessage(err), "logs": logs.String()} {
			if strings.Contains(s, key) || strings.Contains(s, srv.key) {
				t.Fatalf("%+v: the key shows in the %s: %s", o, what, s)
			}
		}
		if !strings.Contains(logs.String(), "agent backend failed") {
			t.Fatalf("%+v: the failure was not logged: %s", o, logs.String())
		}
	}
	// A card (on 127.0.0.1) whose endpoint is on another host (localhost).
	srv := startV1Server(t, v1Opts{key: key})
	srv.card = bytes.ReplaceAll(srv.card, []byte("127.0.0.1"), []byte("localhost"))
	b := srv.backend()
	b.APIKey = key
	rt := newTestRuntime(t, b, RuntimeOptions{})
	_, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
	if !errors.Is(err, agent.ErrBackendRejected) || !strings.Contains(PublicMessage(err), "another site") {
		t.Fatalf("endpoint on another site: %v (%q)", err, PublicMessage(err))
	}
	if calls, _ := srv.seen(); len(calls) != 0 {
		t.Fatalf("calls %v; the key must not leave for another site", calls)
	}
}

// TestA2A10SignedCards: a card signed by a node's key is used and its
// signer reported; a card changed after signing is refused with the
// reason; a card signed by another node than the one pinned at
// registration is refused.
func TestA2A10SignedCards(t *testing.T) {
	key, _, err := crypto.GenerateEd25519Key(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := peer.IDFromPrivateKey(key)
	srv := startV1Server(t, v1Opts{streaming: true, signKey: key})
	b := srv.backend()
	b.CardSigner = pid.String()
	rt := newTestRuntime(t, b, RuntimeOptions{})
	info, err := rt.FetchA2ACard(context.Background(), b.URL)
	if err != nil || info.Signer != pid.String() {
		t.Fatalf("FetchA2ACard: signer %q, %v; want %s", info.Signer, err, pid)
	}
	if reply, err := rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil); err != nil || reply != "turn 1: hi" {
		t.Fatalf("signed card: %q, %v", reply, err)
	}

	tampered := startV1Server(t, v1Opts{streaming: true, signKey: key, tamper: true})
	rt = newTestRuntime(t, tampered.backend(), RuntimeOptions{})
	_, err = rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
	if !errors.Is(err, agent.ErrBackendRejected) || !strings.Contains(PublicMessage(err), "signature") {
		t.Fatalf("tampered card: %v (%q)", err, PublicMessage(err))
	}
	if _, err := rt.FetchA2ACard(context.Background(), tampered.URL+"/card.json"); !errors.Is(err, cardsig.ErrTampered) {
		t.Fatalf("FetchA2ACard of a tampered card: %v", err)
	}
	if calls, _ := tampered.seen(); len(calls) != 0 {
		t.Fatalf("calls %v to an agent whose card is refused", calls)
	}

	// A signed card whose only interface is 0.3's url: the url is not
	// covered by the signature, so it is not used.
	legacy, _ := json.Marshal(map[string]any{"name": "Old", "description": "0.3 only", "version": "1",
		"url": srv.URL + "/rpc", "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0", "capabilities": map[string]any{}})
	legacySigned, err := cardsig.Sign(legacy, key, pid.String())
	if err != nil {
		t.Fatal(err)
	}
	old := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(legacySigned) }))
	defer old.Close()
	if _, err := rt.FetchA2ACard(context.Background(), old.URL+"/card.json"); !errors.Is(err, agent.ErrBackendRejected) ||
		!strings.Contains(PublicMessage(err), "no JSON-RPC or HTTP+JSON interface") {
		t.Fatalf("signed card with only a 0.3 url: %v (%q)", err, PublicMessage(err))
	}

	other, _, _ := crypto.GenerateEd25519Key(rand.Reader)
	resigned := startV1Server(t, v1Opts{streaming: true, signKey: other})
	b = resigned.backend()
	b.CardSigner = pid.String()
	rt = newTestRuntime(t, b, RuntimeOptions{})
	_, err = rt.Answer(context.Background(), a2aTestTurn("c1", "hi"), nil)
	if !errors.Is(err, agent.ErrBackendRejected) || !strings.Contains(PublicMessage(err), "no longer signed by node "+pid.String()) {
		t.Fatalf("card signed by another node: %v (%q)", err, PublicMessage(err))
	}
}
