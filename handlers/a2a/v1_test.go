package a2a_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentsite/agentsite/agent/runtime"
	srv "github.com/agentsite/agentsite/handlers/a2a"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// v1Resp is an A2A 1.0 JSON-RPC response.
type v1Resp struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int              `json:"code"`
		Message string           `json:"message"`
		Data    []map[string]any `json:"data"`
	} `json:"error"`
}

func rpc1(e *Env, path, body string, headers ...string) v1Resp {
	e.T.Helper()
	resp := e.Do(http.MethodPost, path, body, append([]string{"A2A-Version", "1.0"}, headers...)...)
	WantStatus(e.T, resp, http.StatusOK)
	return Decode[v1Resp](e.T, resp)
}

func wantV1Error(t *testing.T, r v1Resp, code int, reason, id string) {
	t.Helper()
	switch {
	case r.Error == nil:
		t.Fatalf("result %s, want error %d", r.Result, code)
	case r.Error.Code != code || string(r.ID) != id:
		t.Fatalf("error %d %q id %s, want %d id %s", r.Error.Code, r.Error.Message, r.ID, code, id)
	case len(r.Error.Data) == 0 || r.Error.Data[0]["reason"] != reason || r.Error.Data[0]["domain"] != "a2a-protocol.org":
		t.Fatalf("error data %+v, want ErrorInfo reason %s", r.Error.Data, reason)
	}
}

// Errors as the specification has them: the id echoed on -32600 (a
// non-string method included, which is valid JSON), -32001 for an unknown
// task, -32009 for a version the node does not serve.
func TestV1Errors(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("v1-bot", "V1 Bot")
	path := "/a2a/" + id
	wantV1Error(t, rpc1(e, path, `{"jsonrpc":"2.0","id":7,"method":42}`), -32600, "INVALID_REQUEST", "7")
	wantV1Error(t, rpc1(e, path, `{"id":"x","method":"SendMessage"}`), -32600, "INVALID_REQUEST", `"x"`)
	wantV1Error(t, rpc1(e, path, `{"jsonrpc":"2.0","id":7,"method":"GetTask","params":{"id":"nope"}}`), -32001, "TASK_NOT_FOUND", "7")
	// A 1.0 stream that cannot start: a JSON error with the HTTP status.
	sub := e.Do(http.MethodPost, path, `{"jsonrpc":"2.0","id":7,"method":"SubscribeToTask","params":{"id":"nope"}}`, "A2A-Version", "1.0")
	WantStatus(t, sub, http.StatusNotFound)
	wantV1Error(t, Decode[v1Resp](t, sub), -32001, "TASK_NOT_FOUND", "7")
	// Not JSON: ContentTypeNotSupported; snake_case members are read as ProtoJSON allows.
	nj := e.Do(http.MethodPost, path, `{}`, "Content-Type", "text/plain", "A2A-Version", "1.0")
	wantV1Error(t, Decode[v1Resp](t, nj), -32005, "CONTENT_TYPE_NOT_SUPPORTED", "null")
	wantV1Error(t, rpc1(e, path, `{"jsonrpc":"2.0","id":9,"method":"ListTasks","params":{"page_size":500}}`), -32602, "INVALID_PARAMS", "9")
	r := rpc1(e, path, `{"jsonrpc":"2.0","id":8,"method":"GetTask","params":{"id":"x"}}`, "A2A-Version", "2.0")
	wantV1Error(t, r, -32009, "VERSION_NOT_SUPPORTED", "8")
	// 0.3's method names still answer in 0.3, -32001 included (and a
	// stream's error is the one event of an event stream).
	wantError(t, call(e, path, "tasks/get", map[string]string{"id": "nope"}), -32001, "")
	sub = post(e, path, "tasks/resubscribe", map[string]string{"id": "nope"})
	if b, _ := io.ReadAll(sub.Body); !strings.Contains(string(b), `"code":-32001`) {
		t.Errorf("tasks/resubscribe of an unknown task = %s", b)
	}

	// REST: HTTP statuses and google.rpc.Status bodies.
	resp := e.Do(http.MethodGet, path+"/tasks/nope", nil)
	WantStatus(t, resp, http.StatusNotFound)
	var st struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Error.Status != "NOT_FOUND" || st.Error.Code != 404 {
		t.Errorf("REST unknown task = %+v, %v", st, err)
	}
	WantStatus(t, e.Do(http.MethodGet, path+"/no-such-route", nil), http.StatusNotFound)
}

// A 1.0 SendMessage answers {"task": …}; the same task over REST.
func TestV1SendAndREST(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("rest-bot", "REST Bot")
	r := rpc1(e, "/a2a/"+id, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"hello there"}]}}}`)
	var sr v1.StreamResponse
	if r.Error != nil || json.Unmarshal(r.Result, &sr) != nil {
		t.Fatalf("SendMessage = %s %+v", r.Result, r.Error)
	}
	task, ok := sr.Event.(*v1.Task)
	if !ok || task.Status.State != v1.TaskStateCompleted || task.Artifacts[0].Parts[0].Text() != "hello there" {
		t.Fatalf("SendMessage result = %s", r.Result)
	}
	resp := e.Do(http.MethodGet, "/a2a/"+id+"/tasks/"+string(task.ID)+"?historyLength=1", nil)
	WantStatus(t, resp, http.StatusOK)
	got := Decode[v1.Task](t, resp)
	if got.ID != task.ID || len(got.History) != 1 || got.Status.State != v1.TaskStateCompleted {
		t.Errorf("REST GetTask = %+v", got)
	}
	resp = e.Do(http.MethodPost, "/a2a/"+id+"/message:send", `{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"via rest"}]}}`)
	WantStatus(t, resp, http.StatusOK)
	var rest v1.StreamResponse
	if err := json.NewDecoder(resp.Body).Decode(&rest); err != nil {
		t.Fatal(err)
	}
	if tk, ok := rest.Event.(*v1.Task); !ok || tk.Artifacts[0].Parts[0].Text() != "via rest" {
		t.Errorf("REST SendMessage = %+v", rest.Event)
	}
}

// A task made with a token is that caller's: anonymous callers get
// TaskNotFound and list none of it.
func TestV1TasksBelongToTheirCaller(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("own-bot", "Own Bot")
	path := "/a2a/" + id
	auth := []string{"Authorization", "Bearer " + OperatorToken}
	send := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"mine"}]}}}`
	var sr v1.StreamResponse
	if err := json.Unmarshal(rpc1(e, path, send, auth...).Result, &sr); err != nil {
		t.Fatal(err)
	}
	task := sr.Event.(*v1.Task)
	get := `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"` + string(task.ID) + `"}}`
	if r := rpc1(e, path, get, auth...); r.Error != nil {
		t.Fatalf("owner's GetTask: %+v", r.Error)
	}
	wantV1Error(t, rpc1(e, path, get), -32001, "TASK_NOT_FOUND", "2")
	list := func(headers ...string) v1.ListTasksResponse {
		var out v1.ListTasksResponse
		r := rpc1(e, path, `{"jsonrpc":"2.0","id":3,"method":"ListTasks","params":{}}`, headers...)
		if r.Error != nil || json.Unmarshal(r.Result, &out) != nil {
			t.Fatalf("ListTasks = %s %+v", r.Result, r.Error)
		}
		return out
	}
	if l := list(auth...); len(l.Tasks) != 1 || l.Tasks[0].ID != task.ID {
		t.Errorf("owner lists %+v", l)
	}
	if l := list(); len(l.Tasks) != 0 {
		t.Errorf("anonymous lists %+v", l)
	}
	// So is the context: another caller naming it starts a conversation of its own.
	other := `{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER",` +
		`"contextId":"` + task.ContextID + `","parts":[{"text":"theirs"}]}}}`
	var osr v1.StreamResponse
	if err := json.Unmarshal(rpc1(e, path, other).Result, &osr); err != nil {
		t.Fatal(err)
	}
	if ot := osr.Event.(*v1.Task); ot.ContextID == task.ContextID || ot.ContextID == "" {
		t.Errorf("another caller continued the owner's context %s", ot.ContextID)
	}
	// A token that does not verify is refused, not taken as anonymous.
	r := rpc1(e, path, get, "Authorization", "Bearer wrong")
	if r.Error == nil || r.Error.Code != -31401 {
		t.Errorf("bad token: %+v", r.Error)
	}
}

// Cards: signed when the node has a key (cmd/agentsite's test checks the
// signature), cached with an ETag, also at GET on the card's url and at
// the old /.well-known/agent.json.
func TestCardCaching(t *testing.T) {
	e, _ := newEnv(t, nil)
	id := e.SeedEcho("cache-bot", "Cache Bot")
	resp := e.Do(http.MethodGet, "/a2a/"+id+"/agent-card.json", nil)
	WantStatus(t, resp, http.StatusOK)
	etag := resp.Header.Get("ETag")
	if etag == "" || !strings.Contains(resp.Header.Get("Cache-Control"), "max-age=") {
		t.Fatalf("headers = %v", resp.Header)
	}
	body, _ := io.ReadAll(resp.Body)
	WantStatus(t, e.Do(http.MethodGet, "/a2a/"+id+"/agent-card.json", nil, "If-None-Match", etag), http.StatusNotModified)
	again := e.Do(http.MethodGet, "/a2a/"+id, nil) // the card's url
	WantStatus(t, again, http.StatusOK)
	if b, _ := io.ReadAll(again.Body); !bytes.Equal(b, body) {
		t.Errorf("GET on the url = %s", b)
	}
	old := e.Do(http.MethodGet, "/.well-known/agent.json", nil)
	WantStatus(t, old, http.StatusMovedPermanently)
	if loc := old.Header.Get("Location"); loc != "/.well-known/agent-card.json" {
		t.Errorf("/.well-known/agent.json redirects to %q", loc)
	}
	WantStatus(t, e.Do(http.MethodGet, "/a2a", nil), http.StatusOK)
	// A 1.0 caller gets the card without 0.3's members.
	c1 := Decode[map[string]any](t, e.Do(http.MethodGet, "/a2a/"+id, nil, "A2A-Version", "1.0"))
	if c1["url"] != nil || c1["protocolVersion"] != nil || c1["supportedInterfaces"] == nil {
		t.Errorf("1.0 card = %v", c1)
	}
}

// logLines keeps log messages, for a test to wait for one.
type logLines struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }
func (l *logLines) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if m == msg {
			return true
		}
	}
	return false
}

// A push notification URL is checked twice: a loopback address is refused
// when the config is made, and the guarded client refuses it again at
// connect time (a name that resolves there), never calling the receiver.
func TestPushURLIsGuarded(t *testing.T) {
	e, f := newEnv(t, nil)
	id := e.SeedEcho("push-bot", "Push Bot")
	called := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called <- struct{}{} }))
	t.Cleanup(srv.Close)
	recv := srv.URL + "/hook"
	logs := &logLines{}
	e.Server.A2A.Logger = slog.New(logs)
	e.Server.A2A.PushBackoff = time.Millisecond

	for _, u := range []string{"ftp://example.org/hook", recv, "http://[::ffff:127.0.0.1]/hook", "http://169.254.169.254/latest", "http://user:pw@example.org/hook"} {
		bad := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"x"}]},` +
			`"configuration":{"taskPushNotificationConfig":{"url":"` + u + `"}}}}`
		wantV1Error(t, rpc1(e, "/a2a/"+id, bad), -32602, "INVALID_PARAMS", "1")
	}

	// As if the URL's name resolved to loopback once the config was made:
	// the config passes, the client refuses the address it would dial.
	port := uint16(srv.Listener.Addr().(*net.TCPAddr).Port)
	e.Server.A2A.PushPolicy = runtime.Policy{Allow: runtime.AllowList{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: port}}}
	send := `{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","parts":[{"text":"block"}]},` +
		`"configuration":{"returnImmediately":true,"taskPushNotificationConfig":{"url":"` + recv + `","token":"t"}}}}`
	r := rpc1(e, "/a2a/"+id, send)
	if r.Error != nil {
		t.Fatalf("SendMessage: %+v", r.Error)
	}
	<-f.blocked
	var sr v1.StreamResponse
	if err := json.Unmarshal(r.Result, &sr); err != nil {
		t.Fatal(err)
	}
	cancel := `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"` + string(sr.Event.(*v1.Task).ID) + `"}}`
	if r := rpc1(e, "/a2a/"+id, cancel); r.Error != nil {
		t.Fatalf("CancelTask: %+v", r.Error)
	}
	<-f.ended
	waitfor.Until(t, 10*time.Second, "the refused notification to be reported", func() bool {
		return logs.has("A2A push notification refused: the callback is not a public address")
	})
	select {
	case <-called:
		t.Error("a loopback receiver was called through the guarded client")
	default:
	}
}

// 0.3's tasks/resubscribe follows a running task as SubscribeToTask does:
// the task, then its changes, the last a final status-update.
func TestResubscribe03(t *testing.T) {
	e, f := newEnv(t, nil)
	id := e.SeedEcho("resub-bot", "Resub Bot")
	no := false
	params := a2a.MessageSendParams{Message: message("block", ""), Config: &a2a.MessageSendConfig{Blocking: &no}}
	task := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "message/send", params))
	<-f.blocked
	resp := post(e, "/a2a/"+id, "tasks/resubscribe", a2a.TaskIDParams{ID: task.ID})
	WantStatus(t, resp, http.StatusOK)
	sc := bufio.NewScanner(resp.Body)
	var kinds []string
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r srv.Response
		if err := json.Unmarshal([]byte(data), &r); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, kind(t, r))
		if len(kinds) == 1 { // the task as it is: now cancel it
			if c := resultOf[a2a.Task](t, call(e, "/a2a/"+id, "tasks/cancel", a2a.TaskIDParams{ID: task.ID})); c.Status.State != a2a.TaskStateCanceled {
				t.Errorf("tasks/cancel = %+v", c.Status)
			}
		}
		if kinds[len(kinds)-1] == "status-update" {
			if last := resultOf[a2a.TaskStatusUpdateEvent](t, r); !last.Final || last.Status.State != a2a.TaskStateCanceled {
				t.Errorf("last event = %+v", last)
			}
		}
	}
	<-f.ended
	if len(kinds) < 2 || kinds[0] != "task" || kinds[len(kinds)-1] != "status-update" {
		t.Errorf("resubscribe events = %v", kinds)
	}
	// A task that has ended has nothing to follow.
	wantError(t, resultOfStream(t, post(e, "/a2a/"+id, "tasks/resubscribe", a2a.TaskIDParams{ID: task.ID})), -32004, "")
}

// resultOfStream reads the one event of a stream that failed.
func resultOfStream(t *testing.T, resp *http.Response) srv.Response {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	data, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "data: ")
	if !ok {
		t.Fatalf("stream = %s", b)
	}
	var r srv.Response
	if err := json.Unmarshal([]byte(data), &r); err != nil {
		t.Fatal(err)
	}
	return r
}
