package a2a_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/handlers"
	srv "github.com/agentsite/agentsite/handlers/a2a"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

func TestJSONRPCErrors(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("err-bot", "Err Bot")
	path := "/a2a/" + id
	fileOnly := `{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"file","file":{"uri":"https://example.org/a.pdf"}}]}}`
	for name, tc := range map[string]struct {
		body     string
		code     int
		dataCode string
	}{
		"not JSON":         {`{"jsonrpc":`, -32700, ""},
		"not JSON-RPC 2.0": {`{"method":"message/send","id":7}`, -32600, ""},
		"bad id":           {`{"jsonrpc":"2.0","method":"tasks/get","id":{"a":1}}`, -32600, ""},
		"unknown method":   {`{"jsonrpc":"2.0","method":"agent/dance","id":7}`, -32601, ""},
		"no params":        {`{"jsonrpc":"2.0","method":"message/send","id":7}`, -32602, ""},
		"no message":       {`{"jsonrpc":"2.0","method":"message/send","id":7,"params":{}}`, -32602, ""},
		"wrong types":      {`{"jsonrpc":"2.0","method":"message/send","id":7,"params":{"message":"hi"}}`, -32602, ""},
		"file only":        {`{"jsonrpc":"2.0","method":"message/send","id":7,"params":` + fileOnly + `}`, -32005, ""},
		"push config":      {`{"jsonrpc":"2.0","method":"tasks/pushNotificationConfig/set","id":7,"params":{}}`, -32602, ""},
	} {
		t.Run(name, func(t *testing.T) {
			resp := e.Do(http.MethodPost, path, tc.body)
			WantStatus(t, resp, http.StatusOK)
			wantError(t, Decode[srv.Response](t, resp), tc.code, tc.dataCode)
		})
	}

	// Domain errors carry the portal's safe message and stable code.
	empty := call(e, path, "message/send", send(message("   ", "")))
	wantError(t, empty, -32602, "empty_message")
	big := call(e, path, "message/send", send(message(strings.Repeat("x", 9<<10), "")))
	wantError(t, big, -32602, "message_too_large")
	wantError(t, call(e, "/a2a/no-such-agent", "message/send", send(message("hi", ""))), -32000, "unknown_agent")
	// A refused message starts no conversation.
	if convs, err := e.Store.ListConversations(t.Context(), string(chat.A2AAnonymous), 10); err != nil || len(convs) != 0 {
		t.Errorf("conversations after refusals = %+v, %v", convs, err)
	}

	// A message naming a task: every turn here is its own task.
	done := resultOf[a2a.Task](t, call(e, path, "message/send", send(message("hi", ""))))
	follow := message("and then?", done.ContextID)
	follow.TaskID = done.ID
	wantError(t, call(e, path, "message/send", send(follow)), -32602, "")
	follow.TaskID = "unknown-task"
	wantError(t, call(e, path, "message/send", send(follow)), -32001, "")
}

// Errors of a stream come as an event stream too: that is what a client
// of message/stream reads.
func TestStreamErrorsAreEvents(t *testing.T) {
	e, _ := newEnv(t, nil)
	events := streamEvents(e, "/a2a/no-such-agent", send(message("hi", "")))
	if len(events) != 1 {
		t.Fatalf("events = %+v", events)
	}
	wantError(t, events[0], -32000, "unknown_agent")
	wantError(t, streamEvents(e, "/a2a/x", "{}")[0], -32602, "")
}

func TestBodyIsCapped(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("cap-bot", "Cap Bot")
	huge := `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"metadata":{"pad":"` + strings.Repeat("x", srv.MaxBodyBytes) + `"}}}`
	resp := e.Do(http.MethodPost, "/a2a/"+id, huge)
	WantStatus(t, resp, http.StatusRequestEntityTooLarge)
	if got := Decode[srv.Response](t, resp); got.Error == nil || got.Error.Data.Code != "too_large" {
		t.Errorf("response = %+v", got)
	}
}

// message/send and message/stream spend the client's chat budget, like
// the other chat surfaces; reading tasks does not.
func TestMessagesAreRateLimited(t *testing.T) {
	e, _ := newEnv(t, func(c *handlers.Config) { c.ChatRateLimit = 6 }) // a burst of 5
	id := e.SeedEcho("busy-bot", "Busy Bot")
	var last a2a.Task
	for range 5 {
		last = resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message("hi", ""))))
	}
	for _, method := range []string{"message/send", "message/stream"} {
		resp := post(e, "/a2a/"+id, method, send(message("hi", "")))
		WantStatus(t, resp, http.StatusTooManyRequests)
		if resp.Header.Get("Retry-After") == "" {
			t.Error("no Retry-After")
		}
		var r srv.Response
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Error == nil || r.Error.Data.Code != "rate_limited" {
			t.Errorf("%s over the limit: %+v, %v", method, r, err)
		}
	}
	resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/get", a2a.TaskQueryParams{ID: last.ID}))
}

// A turn may take longer than an ordinary response: /a2a has the stream
// write deadline, not the short one; and once the request is read, the
// body read deadline must not end it.
func TestLongTurnOutlivesShortDeadlines(t *testing.T) {
	const short = 300 * time.Millisecond
	for name, edit := range map[string]func(*handlers.Config){
		"write timeout": func(c *handlers.Config) { c.WriteTimeout = short; c.StreamWriteTimeout = time.Minute },
		"body timeout":  func(c *handlers.Config) { c.BodyTimeout = short },
	} {
		t.Run(name, func(t *testing.T) {
			e, _ := newEnv(t, edit)
			id := e.SeedEcho("slow-bot", "Slow Bot")
			slow := "slow:" + (3 * short).String()
			task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", send(message(slow, ""))))
			if task.Status.State != a2a.TaskStateCompleted {
				t.Errorf("task = %+v", task.Status)
			}
			if last := finalStatus(t, streamEvents(e, "/a2a/"+id, send(message(slow, "")))); last.Status.State != a2a.TaskStateCompleted {
				t.Errorf("last event = %+v", last)
			}
		})
	}
}

// What the node refuses before the A2A surface sees a request (a browser
// page of another site, a path or method that does not exist) is JSON too.
func TestRefusalsBeforeTheSurfaceAreJSON(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("json-bot", "JSON Bot")
	for name, resp := range map[string]*http.Response{
		"cross-origin": e.Do(http.MethodPost, "/a2a/"+id, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`,
			"Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site"),
		"no such path": e.Do(http.MethodGet, "/a2a/"+id+"/nothing-here", nil),
		"wrong method": e.Do(http.MethodDelete, "/a2a/"+id, nil),
	} {
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || resp.StatusCode < 400 {
			t.Errorf("%s: status %d, Content-Type %q", name, resp.StatusCode, ct)
		}
	}
}
