package runtime

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentsite/agentsite/agent"
)

// webhookServer answers POSTs with status and body, recording the request.
func webhookServer(t *testing.T, status int, body string, got *webhookRequest, auth *string) agent.Backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s with Content-Type %q", r.Method, r.Header.Get("Content-Type"))
		}
		if got != nil {
			if err := json.NewDecoder(r.Body).Decode(got); err != nil {
				t.Errorf("request body: %v", err)
			}
		}
		if auth != nil {
			*auth = r.Header.Get("Authorization")
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return agent.Backend{Kind: agent.BackendWebhook, URL: srv.URL + "/hook", APIKey: testKey}
}

func TestWebhook(t *testing.T) {
	var got webhookRequest
	var auth string
	b := webhookServer(t, http.StatusOK, `{"reply":"pong","extra":1}`, &got, &auth)
	reply, chunks, err := answer(t, b, RuntimeOptions{}, agent.Turn{
		ConversationID: "c1",
		History:        []agent.ChatMessage{{Role: "user", Text: "hi"}, {Role: "agent", Text: "hello"}, {Role: "error", Text: "skipped"}},
		Text:           "ping",
	})
	if err != nil {
		t.Fatal(err)
	}
	if reply != "pong" || !reflect.DeepEqual(chunks, []string{"pong"}) {
		t.Fatalf("reply %q, chunks %q", reply, chunks)
	}
	want := webhookRequest{Agent: "a1", ConversationID: "c1", Messages: []webhookMessage{
		{Role: "user", Text: "hi"}, {Role: "agent", Text: "hello"}, {Role: "user", Text: "ping"},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("request %+v, want %+v", got, want)
	}
	if auth != "Bearer "+testKey {
		t.Fatalf("Authorization %q", auth)
	}
}

func TestWebhookRequestWireNames(t *testing.T) {
	j, _ := json.Marshal(webhookRequest{Agent: "a", ConversationID: "c", Messages: []webhookMessage{{Role: "user", Text: "t"}}})
	if want := `{"agent":"a","conversation_id":"c","messages":[{"role":"user","text":"t"}]}`; string(j) != want {
		t.Fatalf("%s, want %s", j, want)
	}
}

func TestWebhookFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		max    int
		want   error
	}{
		{"not JSON", http.StatusOK, "pong", 0, agent.ErrBadBackendReply},
		{"no reply field", http.StatusOK, `{"answer":"pong"}`, 0, agent.ErrBadBackendReply},
		{"reply not a string", http.StatusOK, `{"reply":42}`, 0, agent.ErrBadBackendReply},
		{"reply too large", http.StatusOK, `{"reply":"` + strings.Repeat("a", 2000) + `"}`, 1024, agent.ErrReplyTooLarge},
		{"body too large", http.StatusOK, `{"reply":"a","pad":"` + strings.Repeat("a", 20000) + `"}`, 1024, agent.ErrReplyTooLarge},
		{"not found", http.StatusNotFound, `{"error":"no such hook"}`, 0, agent.ErrBackendRejected},
		{"rate limited", http.StatusTooManyRequests, ``, 0, agent.ErrBackendRejected},
		{"server error", http.StatusInternalServerError, `oops`, 0, agent.ErrBackendUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := webhookServer(t, tc.status, tc.body, nil, nil)
			_, _, err := answer(t, b, RuntimeOptions{MaxReplyBytes: tc.max}, agent.Turn{Text: "ping"})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}
