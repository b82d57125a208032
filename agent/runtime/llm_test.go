package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent"
)

const testKey = "sk-test-5ECRETKEY0123456789"

// lockedBuffer collects log output from concurrent goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// sseChunk is one event of the OpenAI streaming wire format.
func sseChunk(content string) string {
	c, _ := json.Marshal(content)
	return fmt.Sprintf(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"content":%s},"finish_reason":null}]}`+"\n\n", c)
}

const (
	sseRoleChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	sseStopChunk = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"test-model","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n"
	sseDone      = "data: [DONE]\n\n"
)

// llmServer serves /v1/chat/completions with handler.
func llmServer(t *testing.T, handler http.HandlerFunc) agent.Backend {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", handler)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return agent.Backend{Kind: agent.BackendLLM, URL: srv.URL + "/v1/", Model: "test-model", SystemPrompt: "You are terse.", APIKey: testKey}
}

func startSSE(w http.ResponseWriter) http.Flusher {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	f.Flush()
	return f
}

// answer runs one turn against b with logs captured, and checks that the
// API key shows up neither in the error nor in the logs.
func answer(t *testing.T, b agent.Backend, opts RuntimeOptions, turn agent.Turn) (reply string, chunks []string, err error) {
	t.Helper()
	var logs lockedBuffer
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := newTestRuntime(t, b, opts)
	turn.AgentID = "a1"
	reply, err = rt.Answer(context.Background(), turn, func(s string) error { chunks = append(chunks, s); return nil })
	if err != nil {
		t.Logf("error: %v", err)
	}
	if err != nil && b.APIKey != "" && strings.Contains(err.Error(), b.APIKey) {
		t.Errorf("the error shows the API key: %v", err)
	}
	if b.APIKey != "" && strings.Contains(logs.String(), b.APIKey) {
		t.Errorf("the logs show the API key:\n%s", logs.String())
	}
	if err != nil && !strings.Contains(logs.String(), "agent backend failed") {
		t.Errorf("the failure was not logged:\n%s", logs.String())
	}
	return reply, chunks, err
}

func TestLLMStreams(t *testing.T) {
	var got llmRequest
	var auth string
	gotHel := make(chan struct{})
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("request body: %v", err)
		}
		f := startSSE(w)
		io.WriteString(w, sseRoleChunk)
		io.WriteString(w, ": keep-alive\n\n")
		io.WriteString(w, sseChunk("Hel"))
		f.Flush()
		// The rest only once the first chunk has reached the caller: the
		// reply is streamed, not buffered.
		select {
		case <-gotHel:
		case <-time.After(5 * time.Second):
			t.Error("the first chunk was not emitted before the stream ended")
		}
		io.WriteString(w, "\n")
		io.WriteString(w, sseChunk("lo"))
		io.WriteString(w, "event: ignored\nid: 7\nretry: 1000\n\n")
		io.WriteString(w, sseChunk(" world"))
		io.WriteString(w, sseStopChunk)
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":9}}`+"\n\n")
		io.WriteString(w, sseDone)
	})
	var chunks []string
	var logs lockedBuffer
	rt := newTestRuntime(t, b, RuntimeOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	reply, err := rt.Answer(context.Background(), agent.Turn{
		AgentID: "a1",
		History: []agent.ChatMessage{{Role: "user", Text: "hi"}, {Role: "agent", Text: "hello!"}, {Role: "error", Text: "skipped"}},
		Text:    "how are you?",
	}, func(s string) error {
		if chunks = append(chunks, s); s == "Hel" {
			close(gotHel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if reply != "Hello world" || !reflect.DeepEqual(chunks, []string{"Hel", "lo", " world"}) {
		t.Fatalf("reply %q, chunks %q", reply, chunks)
	}
	want := llmRequest{Model: "test-model", Stream: true, Messages: []llmMessage{
		{Role: "system", Content: "You are terse."},
		{Role: "user", Content: "hi"},
		{Role: "assistant", Content: "hello!"},
		{Role: "user", Content: "how are you?"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("request %+v, want %+v", got, want)
	}
	if auth != "Bearer "+testKey {
		t.Fatalf("Authorization %q", auth)
	}
	if strings.Contains(logs.String(), testKey) {
		t.Fatal("the key was logged")
	}
}

func TestLLMNoKeyNoSystemPrompt(t *testing.T) {
	var got llmRequest
	var auth []string
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Values("Authorization")
		json.NewDecoder(r.Body).Decode(&got)
		startSSE(w)
		io.WriteString(w, sseChunk("ok")+sseDone)
	})
	b.APIKey, b.SystemPrompt = "", ""
	reply, _, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if err != nil || reply != "ok" {
		t.Fatalf("%q, %v", reply, err)
	}
	if len(auth) != 0 || len(got.Messages) != 1 || !reflect.DeepEqual(got.Messages[0], llmMessage{Role: "user", Content: "x"}) {
		t.Fatalf("auth %q, messages %+v", auth, got.Messages)
	}
}

func TestLLMNonStreamingServer(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"all at once"},"finish_reason":"stop"}]}`)
	})
	reply, chunks, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if err != nil || reply != "all at once" || len(chunks) != 1 {
		t.Fatalf("%q %q %v", reply, chunks, err)
	}
}

func TestLLMBrokenStream(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		f := startSSE(w)
		io.WriteString(w, sseChunk("Hel")+sseChunk("lo"))
		f.Flush()
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		buf.Flush()
		conn.Close() // mid chunked body, before [DONE]
	})
	reply, chunks, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if !errors.Is(err, agent.ErrBackendUnavailable) && !errors.Is(err, agent.ErrBadBackendReply) {
		t.Fatalf("got %v, want ErrBackendUnavailable or ErrBadBackendReply", err)
	}
	if reply != "Hello" || !reflect.DeepEqual(chunks, []string{"Hel", "lo"}) {
		t.Fatalf("partial reply %q, chunks %q", reply, chunks)
	}
}

func TestLLMStreamEndsWithoutDone(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		io.WriteString(w, sseChunk("Hel"))
	})
	_, _, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if !errors.Is(err, agent.ErrBadBackendReply) {
		t.Fatalf("got %v, want ErrBadBackendReply", err)
	}
}

func TestLLMMalformedChunk(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		io.WriteString(w, sseChunk("a")+"data: {not json\n\n"+sseDone)
	})
	_, _, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if !errors.Is(err, agent.ErrBadBackendReply) {
		t.Fatalf("got %v, want ErrBadBackendReply", err)
	}
}

func TestLLMRateLimited(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		// Providers echo (parts of) the key; none of it may travel on.
		fmt.Fprintf(w, `{"error":{"message":"Rate limit reached for key %s (sk-tes***789)","type":"requests"}}`, testKey)
	})
	_, _, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if !errors.Is(err, agent.ErrBackendRejected) {
		t.Fatalf("got %v, want ErrBackendRejected", err)
	}
	var be *BackendError
	if !errors.As(err, &be) || be.Status != 429 || be.RetryAfter != 30*time.Second {
		t.Fatalf("got %#v", be)
	}
	if pm := PublicMessage(err); !strings.Contains(pm, "rate limited upstream") || !strings.Contains(pm, "retry after 30s") {
		t.Fatalf("public message %q", pm)
	}
	if !strings.Contains(err.Error(), "Rate limit reached") || strings.Contains(err.Error(), "sk-tes***") {
		t.Fatalf("error %q should quote the upstream, redacted", err)
	}
	if last := err.Error()[strings.LastIndex(err.Error(), ": ")+2:]; last != PublicMessage(err) {
		t.Fatalf("the error's last segment %q is not its public message", last)
	}
}

func TestLLMStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   error
	}{
		{http.StatusUnauthorized, agent.ErrBackendRejected},
		{http.StatusNotFound, agent.ErrBackendRejected},
		{http.StatusInternalServerError, agent.ErrBackendUnavailable},
		{http.StatusBadGateway, agent.ErrBackendUnavailable},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, strings.Repeat("x", 1<<20)) // bounded read
			})
			_, _, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if len(err.Error()) > 1000 {
				t.Fatalf("error text is %d bytes", len(err.Error()))
			}
		})
	}
}

// TestLLMTimeout: the turn's time limit cuts the request, before the
// headers or mid-stream; the server sees its client go away rather than
// giving up on it after 10 s.
func TestLLMTimeout(t *testing.T) {
	for name, stall := range map[string]bool{"before headers": false, "mid-stream": true} {
		t.Run(name, func(t *testing.T) {
			ends := make(chan bool, 1) // true: the client went away
			b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so the server notices the client leave
				if stall {
					f := startSSE(w)
					io.WriteString(w, sseChunk("Hel"))
					f.Flush()
				}
				cut := false
				select {
				case <-r.Context().Done():
					cut = true
				case <-time.After(10 * time.Second):
				}
				select {
				case ends <- cut:
				default:
				}
			})
			reply, _, err := answer(t, b, RuntimeOptions{Timeout: 300 * time.Millisecond}, agent.Turn{Text: "x"})
			if !errors.Is(err, agent.ErrBackendTimeout) {
				t.Fatalf("got %v, want ErrBackendTimeout", err)
			}
			select {
			case cut := <-ends:
				if !cut {
					t.Fatal("the request ran until the server gave up on it: the time limit did not cut it")
				}
			case <-time.After(20 * time.Second): // the server gives up after 10 s
				t.Fatal("the server never ended the request")
			}
			if stall && reply != "Hel" {
				t.Fatalf("partial reply %q", reply)
			}
		})
	}
}

func TestLLMReplyTooLarge(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		for range 100 {
			io.WriteString(w, sseChunk(strings.Repeat("a", 50)))
		}
		io.WriteString(w, sseDone)
	})
	reply, _, err := answer(t, b, RuntimeOptions{MaxReplyBytes: 1024}, agent.Turn{Text: "x"})
	if !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("got %v, want ErrReplyTooLarge", err)
	}
	if len(reply) > 1024 {
		t.Fatalf("returned %d bytes", len(reply))
	}
}

func TestLLMLineTooLong(t *testing.T) {
	b := llmServer(t, func(w http.ResponseWriter, r *http.Request) {
		startSSE(w)
		io.WriteString(w, "data: "+strings.Repeat("x", maxSSELine+10)+"\n\n")
	})
	_, _, err := answer(t, b, RuntimeOptions{}, agent.Turn{Text: "x"})
	if !errors.Is(err, agent.ErrReplyTooLarge) {
		t.Fatalf("got %v, want ErrReplyTooLarge", err)
	}
}

func TestChatCompletionsURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example.com/v1":                   "https://api.example.com/v1/chat/completions",
		"https://api.example.com/v1/":                  "https://api.example.com/v1/chat/completions",
		"https://api.example.com":                      "https://api.example.com/chat/completions",
		"https://api.example.com/v1/chat/completions":  "https://api.example.com/v1/chat/completions",
		"https://api.example.com/openai/v1?api-ver=2":  "https://api.example.com/openai/v1/chat/completions?api-ver=2",
		"http://127.0.0.1:11434/v1//":                  "http://127.0.0.1:11434/v1/chat/completions",
		"https://api.example.com/v1/chat/completions/": "https://api.example.com/v1/chat/completions",
	} {
		if got, err := chatCompletionsURL(in); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := chatCompletionsURL("ftp://x/v1"); err == nil {
		t.Error("ftp accepted")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"12":                            12 * time.Second,
		"-5":                            0,
		"soon":                          0,
		"Fri, 02 Jan 2026 03:05:05 GMT": time.Minute,
		"Fri, 02 Jan 2026 03:00:00 GMT": 0,
	} {
		if got := parseRetryAfter(in, now); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}
