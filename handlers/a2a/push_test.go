package a2a_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/agentsite/agentsite/agent/runtime"
	srv "github.com/agentsite/agentsite/handlers/a2a"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/handlers/httpkit"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// pushReceiver is a callback URL on loopback that counts the POSTs it gets
// and keeps their Authorization headers.
type pushReceiver struct {
	url   string
	port  uint16
	posts atomic.Int64
	mu    sync.Mutex
	auth  []string
}

func newPushReceiver(t *testing.T) *pushReceiver {
	t.Helper()
	p := &pushReceiver{}
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.mu.Unlock()
		p.posts.Add(1)
	}))
	t.Cleanup(s.Close)
	p.url = s.URL + "/hook"
	_, port, _ := net.SplitHostPort(s.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	p.port = uint16(n)
	return p
}

// openPushTo lets e's push notifications reach recv, as only a test may:
// the node's push policy reaches public addresses alone.
func openPushTo(e *Env, recv *pushReceiver) {
	p := runtime.Policy{Allow: runtime.AllowList{{Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: recv.port}}}
	e.Server.A2A.PushPolicy, e.Server.A2A.PushClient = p, srv.NewPushClient(p)
	e.Server.A2A.PushBackoff = time.Millisecond
}

// startWorkingTask starts a "block" task on agent id, returning once it
// is working (the states a push follower tells of are all behind it).
func startWorkingTask(t *testing.T, e *Env, f *fakeAgent, id string) string {
	t.Helper()
	r := rpc1(e, "/a2a/"+id, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"block"}]},"configuration":{"returnImmediately":true}}}`)
	if r.Error != nil {
		t.Fatalf("SendMessage: %+v", r.Error)
	}
	<-f.blocked
	var sr v1.StreamResponse
	if err := json.Unmarshal(r.Result, &sr); err != nil {
		t.Fatal(err)
	}
	taskID := string(sr.Event.(*v1.Task).ID)
	waitfor.Until(t, 20*time.Second, "the task to be working", func() bool {
		r := rpc1(e, "/a2a/"+id, `{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"`+taskID+`"}}`)
		var task v1.Task
		return r.Error == nil && json.Unmarshal(r.Result, &task) == nil && task.Status.State == v1.TaskStateWorking
	})
	return taskID
}

func pushCall(e *Env, agentID, method, params string) *http.Response {
	e.T.Helper()
	return e.Do(http.MethodPost, "/a2a/"+agentID, `{"jsonrpc":"2.0","id":5,"method":"`+method+`","params":`+params+`}`, "A2A-Version", "1.0")
}

func createPush(t *testing.T, e *Env, agentID, taskID, cfgID, url, extra string) {
	t.Helper()
	resp := pushCall(e, agentID, "CreateTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"`+cfgID+`","url":"`+url+`"`+extra+`}`)
	WantStatus(t, resp, http.StatusOK)
	if r := Decode[v1Resp](t, resp); r.Error != nil {
		t.Fatalf("create push config %s: %+v", cfgID, r.Error)
	}
}

func deletePush(t *testing.T, e *Env, agentID, taskID, cfgID string) {
	t.Helper()
	resp := pushCall(e, agentID, "DeleteTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"`+cfgID+`"}`)
	WantStatus(t, resp, http.StatusOK)
	if r := Decode[v1Resp](t, resp); r.Error != nil {
		t.Fatalf("delete push config %s: %+v", cfgID, r.Error)
	}
}

// A task has one push follower, however many configs come and go: 500
// create/delete cycles of one config id leave the goroutines where they
// were, and the task's one change is told once to each config it has then.
// The caller's credentials go to its URL and into no log line.
func TestPushConfigChurnKeepsOneFollower(t *testing.T) {
	e, f := newEnv(t, nil)
	id := e.SeedEcho("churn-bot", "Churn Bot")
	recv := newPushReceiver(t)
	openPushTo(e, recv)
	var logs bytes.Buffer
	var logMu sync.Mutex
	e.Server.A2A.Logger = slog.New(slog.NewJSONHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.Server.A2A.PushCallerWrites, e.Server.A2A.PushTaskWrites = httpkit.NewRates(1e6), httpkit.NewRates(1e6)

	taskID := startWorkingTask(t, e, f, id)
	base := goruntime.NumGoroutine()
	for range 500 {
		createPush(t, e, id, taskID, "same", recv.url, "")
		deletePush(t, e, id, taskID, "same")
	}
	const slack = 10 // the test's own HTTP connections come and go
	t.Logf("goroutines after 500 create/delete cycles: %d more than before", goroutinesAbove(base, slack))
	waitfor.Until(t, 20*time.Second, "the goroutines to settle", func() bool { return goruntime.NumGoroutine() <= base+slack })

	const secret = "push-secret-NEVER-LOGGED"
	createPush(t, e, id, taskID, "same", recv.url, `,"authentication":{"scheme":"Bearer","credentials":"`+secret+`"}`)
	createPush(t, e, id, taskID, "other", recv.url, "")
	if r := rpc1(e, "/a2a/"+id, `{"jsonrpc":"2.0","id":3,"method":"CancelTask","params":{"id":"`+taskID+`"}}`); r.Error != nil {
		t.Fatalf("CancelTask: %+v", r.Error)
	}
	<-f.ended
	waitfor.Until(t, 20*time.Second, "a notification to each live config", func() bool { return recv.posts.Load() >= 2 })
	waitfor.Until(t, 20*time.Second, "the follower to end with the task", func() bool { return goruntime.NumGoroutine() <= base+slack })
	if n := recv.posts.Load(); n != 2 {
		t.Fatalf("one change, two live configs: %d POSTs, want 2", n)
	}
	recv.mu.Lock()
	auth := strings.Join(recv.auth, "|")
	recv.mu.Unlock()
	if !strings.Contains(auth, "Bearer "+secret) {
		t.Errorf("the caller's Authorization did not reach its URL: %q", auth)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), secret) {
		t.Errorf("a log line holds the caller's credentials:\n%s", logs.String())
	}
}

// goroutinesAbove is how many goroutines run above base once they settle
// within slack of it, or after a while: for the log.
func goroutinesAbove(base, slack int) int {
	deadline := time.Now().Add(2 * time.Second)
	for goruntime.NumGoroutine() > base+slack && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // polling a count, not waiting for an outcome
	}
	return goruntime.NumGoroutine() - base
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Push config writes are budgeted per task and per caller: past the
// budget a write is refused with 429 and the configs stay as they were.
func TestPushConfigWritesRateLimited(t *testing.T) {
	e, _ := newEnv(t, nil)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e.Server.A2A.Now = func() time.Time { return now } // no budget refills during the test
	id := e.SeedEcho("budget-bot", "Budget Bot")
	recv := newPushReceiver(t)
	openPushTo(e, recv)
	newTask := func() string {
		r := rpc1(e, "/a2a/"+id, `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"`+fmt.Sprint(time.Now().UnixNano())+`","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`)
		var sr v1.StreamResponse
		if r.Error != nil || json.Unmarshal(r.Result, &sr) != nil {
			t.Fatalf("SendMessage: %+v %s", r.Error, r.Result)
		}
		return string(sr.Event.(*v1.Task).ID)
	}
	write := func(taskID string, i int) int {
		var resp *http.Response
		if i%2 == 0 {
			resp = pushCall(e, id, "CreateTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"c","url":"`+recv.url+`"}`)
		} else {
			resp = pushCall(e, id, "DeleteTaskPushNotificationConfig", `{"taskId":"`+taskID+`","id":"c"}`)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// A task takes a burst of 5 writes (30 a minute).
	first := newTask()
	for i := range 5 {
		if code := write(first, i); code != http.StatusOK {
			t.Fatalf("write %d on a fresh task: %d", i, code)
		}
	}
	if code := write(first, 5); code != http.StatusTooManyRequests {
		t.Fatalf("6th write on one task: %d, want 429", code)
	}
	// A caller takes a burst of 10 (60 a minute), across its tasks.
	second := newTask()
	for i := range 5 {
		if code := write(second, i); code != http.StatusOK {
			t.Fatalf("write %d on a second task: %d", i, code)
		}
	}
	third := newTask()
	if code := write(third, 0); code != http.StatusTooManyRequests {
		t.Fatalf("11th write of one caller: %d, want 429", code)
	}
}
