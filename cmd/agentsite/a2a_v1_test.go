package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/agentsite/agentsite/agent/cardsig"
	"github.com/agentsite/agentsite/internal/waitfor"
)

// a2aJS1Dir holds the official A2A JavaScript SDK at its protocol-1.0 line
// (package.json pins 1.3.0) and the script that drives it in its default
// configuration; CI installs it with npm ci.
var a2aJS1Dir = filepath.Join("..", "..", "testdata", "a2a-js-1")

// fakeBlockingOpenAI is fakeOpenAI, except that the message "block" streams
// one word and then holds the request until the caller goes away (its
// context ends): a turn that runs until it is canceled. started hears of
// each such request; canceled counts those whose caller went away.
func fakeBlockingOpenAI(t *testing.T) (url string, started chan struct{}, canceled *atomic.Int64) {
	t.Helper()
	canceled, started = new(atomic.Int64), make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := req.Messages[len(req.Messages)-1].Content
		w.Header().Set("Content-Type", "text/event-stream")
		reply := fmt.Sprintf("I have seen %d earlier messages. You said: %s", len(req.Messages)-1, last)
		if last == "block" {
			reply = "working "
		}
		for _, word := range strings.SplitAfter(reply, " ") {
			chunk, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"delta": map[string]string{"content": word}}}})
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			w.(http.Flusher).Flush()
		}
		if last == "block" {
			started <- struct{}{}
			<-r.Context().Done()
			canceled.Add(1)
			return
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", started, canceled
}

// pushed is one push notification the receiver got.
type pushed struct {
	token string
	body  []byte
}

// pushReceiver is a client's push notification endpoint.
func pushReceiver(t *testing.T) (url string, got chan pushed) {
	t.Helper()
	got = make(chan pushed, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		select {
		case got <- pushed{token: r.Header.Get("A2A-Notification-Token"), body: b}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook", got
}

// waitPush waits for a push notification of taskID's state want.
func waitPush(t *testing.T, got chan pushed, taskID, want string) pushed {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case p := <-got:
			var sr struct {
				StatusUpdate *struct {
					TaskID string `json:"taskId"`
					Status struct {
						State string `json:"state"`
					} `json:"status"`
				} `json:"statusUpdate"`
			}
			if json.Unmarshal(p.body, &sr) == nil && sr.StatusUpdate != nil && sr.StatusUpdate.TaskID == taskID &&
				sr.StatusUpdate.Status.State == want {
				return p
			}
		case <-deadline:
			t.Fatalf("no push notification of %s for task %s", want, taskID)
			return pushed{}
		}
	}
}

// The official A2A 1.0 clients against a two-node planet, each in its
// default configuration: @a2a-js/sdk 1.3.0's ClientFactory, and a2a-go
// v2's client over JSON-RPC and over HTTP+JSON. They discover an agent
// hosted on B from A's card, and every turn goes A → libp2p → B → the
// agent's model and back; a cancel goes the same way.
func TestA2A1ClientsAcrossTwoNodes(t *testing.T) {
	llm, started, canceled := fakeBlockingOpenAI(t)
	hook, pushes := pushReceiver(t)
	// Push never reaches loopback but where a test opens it (reach).
	a := startClusterNode(t, nodeOpts{extra: []string{"--allow-private-endpoints"}, reach: []string{hook}})
	b := startClusterNode(t, nodeOpts{bootstrap: []string{a.addr()}, extra: []string{"--allow-private-endpoints"}, reach: []string{hook}})
	code, body := b.api("POST", "/api/v1/agents", map[string]any{
		"name": "memory-bot", "display_name": "Memory Bot", "description": "Remembers the conversation.", "tags": []string{"test"},
		"backend": map[string]string{"kind": "llm", "url": llm, "model": "fake-model"},
	})
	if code != http.StatusCreated {
		t.Fatalf("register on B: %d %s", code, body)
	}
	var created apiAgent
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	waitfor.Until(t, 15*time.Second, "A to list the agent hosted on B", func() bool {
		code, got := a.agent(created.ID)
		return code == http.StatusOK && !got.Local && got.Status == "online"
	})
	cardURL := a.m.HTTPURL() + "/a2a/" + created.ID + "/agent-card.json"

	// The card: signed by A, whose peer id the signature names.
	resp, err := http.Get(cardURL)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if signer, err := cardsig.Verify(raw); err != nil || signer != a.m.Node.PeerID() {
		t.Errorf("card signed by %q (%v), want A %s", signer, err, a.m.Node.PeerID())
	}
	// And it carries B's own signed record of the agent.
	if rec, err := cardsig.VerifyHostRecord(raw, time.Now()); err != nil || rec.Publisher != b.m.Node.PeerID() || rec.ID != created.ID {
		t.Errorf("host record %+v (%v), want B's %s", rec, err, b.m.Node.PeerID())
	}

	// The JS client is given only the agent's url (with a final slash: it
	// resolves the card's path relative to it).
	agentURL := a.m.HTTPURL() + "/a2a/" + created.ID + "/"
	t.Run("js", func(t *testing.T) { a2aJS1(t, agentURL, hook, pushes, started, canceled) })
	for _, tr := range []a2a.TransportProtocol{a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON} {
		t.Run("go "+string(tr), func(t *testing.T) { a2aGo1(t, raw, tr, hook, pushes, started, canceled) })
	}
}

// a2aJS1Result is what testdata/a2a-js-1/a2a-client.mjs prints.
type a2aJS1Result struct {
	Card struct {
		Name              string
		Interfaces        []string
		Signatures        int
		ExtendedAgentCard bool
	}
	Send struct {
		TaskID, ContextID, State, Reply string
		History                         int
	}
	Stream struct {
		Cases                  []string
		ContextID, State, Text string
	}
	Get struct {
		TaskID, State, Reply string
	}
	List struct {
		IDs       []string
		TotalSize int
	}
	Other struct {
		Get    string
		Listed int
	}
	CancelDone string
	Running    struct {
		TaskID, Push, Final, Canceled string
		Pushes                        int
		Cases                         []string
	}
	Extended struct {
		Skills    []string
		Anonymous string // the error of an anonymous GetExtendedAgentCard
	}
}

func a2aJS1(t *testing.T, cardURL, hook string, pushes chan pushed, started chan struct{}, canceled *atomic.Int64) {
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not installed (Node 18 or later)"
	} else if _, err := os.Stat(filepath.Join(a2aJS1Dir, "node_modules", "@a2a-js", "sdk", "package.json")); err != nil {
		missing = "the SDK is not installed: run npm ci --prefix testdata/a2a-js-1"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("A2A JS SDK 1.x test: %s (CI=true: it is required)", missing)
		}
		t.Skipf("A2A JS SDK 1.x NOT AVAILABLE: %s — skipping; in CI this is a failure", missing)
	}
	script, err := filepath.Abs(filepath.Join(a2aJS1Dir, "a2a-client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	before := canceled.Load()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", script, cardURL, testOperator, hook, "hello planet").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node a2a-client.mjs: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node a2a-client.mjs: %v", err)
	}
	var got a2aJS1Result
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	if c := got.Card; c.Name != "Memory Bot" || !slices.Equal(c.Interfaces, []string{"JSONRPC 1.0", "HTTP+JSON 1.0", "JSONRPC 0.3"}) ||
		c.Signatures != 1 || !c.ExtendedAgentCard {
		t.Errorf("card = %+v", c)
	}
	if s := got.Send; s.State != "TASK_STATE_COMPLETED" || s.ContextID == "" || s.History != 2 ||
		s.Reply != "I have seen 0 earlier messages. You said: hello planet" {
		t.Errorf("SendMessage = %+v", s)
	}
	s := got.Stream
	if s.State != "TASK_STATE_COMPLETED" || s.ContextID != got.Send.ContextID || s.Text != "I have seen 2 earlier messages. You said: hello planet (streamed)" {
		t.Errorf("SendStreamingMessage = %+v", s)
	}
	if n := len(s.Cases); n < 4 || s.Cases[0] != "task" || s.Cases[1] != "statusUpdate" || s.Cases[2] != "artifactUpdate" || s.Cases[n-1] != "statusUpdate" {
		t.Errorf("SendStreamingMessage events = %v", s.Cases)
	}
	if g := got.Get; g.TaskID != got.Send.TaskID || g.State != "TASK_STATE_COMPLETED" || g.Reply != got.Send.Reply {
		t.Errorf("GetTask = %+v", g)
	}
	if l := got.List; l.TotalSize != 2 || len(l.IDs) != 2 || l.IDs[1] != got.Send.TaskID {
		t.Errorf("ListTasks = %+v, want the 2 tasks of the context, newest first", l)
	}
	if o := got.Other; o.Get != "JsonRpcTaskNotFoundError" || o.Listed != 0 {
		t.Errorf("another caller: GetTask error %q, ListTasks %d tasks; want JsonRpcTaskNotFoundError and none", o.Get, o.Listed)
	}
	if got.CancelDone != "JsonRpcTaskNotCancelableError" {
		t.Errorf("CancelTask of a finished task: %q, want JsonRpcTaskNotCancelableError", got.CancelDone)
	}
	r := got.Running
	if r.Final != "TASK_STATE_CANCELED" || r.Canceled != "TASK_STATE_CANCELED" || r.Pushes != 1 || len(r.Cases) < 2 || r.Cases[0] != "task" {
		t.Errorf("running task = %+v", r)
	}
	if p := waitPush(t, pushes, r.TaskID, "TASK_STATE_CANCELED"); p.token != "push-secret-token" {
		t.Errorf("push notification token = %q", p.token)
	}
	<-started // the JS client canceled once the model's first word was there
	waitfor.Until(t, 10*time.Second, "the cancel to reach the model on B", func() bool { return canceled.Load() > before })
	if !slices.Contains(got.Extended.Skills, "my_tasks") {
		t.Errorf("extended card skills = %v", got.Extended.Skills)
	}
	if got.Extended.Anonymous == "" {
		t.Error("an anonymous GetExtendedAgentCard was answered; it needs credentials")
	}
}

func a2aGo1(t *testing.T, rawCard []byte, tr a2a.TransportProtocol, hook string, pushes chan pushed, started chan struct{}, canceled *atomic.Int64) {
	var card a2a.AgentCard
	if err := json.Unmarshal(rawCard, &card); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	client, err := a2aclient.NewFromCard(ctx, &card, a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{tr}}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Destroy() }()
	authed := a2aclient.AttachServiceParams(ctx, a2aclient.ServiceParams{"Authorization": {"Bearer " + testOperator}})
	textOf := func(parts a2a.ContentParts) string {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text())
		}
		return b.String()
	}
	replyOf := func(task *a2a.Task) string {
		var b strings.Builder
		for _, art := range task.Artifacts {
			b.WriteString(textOf(art.Parts))
		}
		return b.String()
	}

	res, err := client.SendMessage(authed, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello go"))})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	sent, ok := res.(*a2a.Task)
	if !ok || sent.Status.State != a2a.TaskStateCompleted || !strings.HasSuffix(replyOf(sent), "You said: hello go") {
		t.Fatalf("SendMessage = %#v", res)
	}

	var kinds []string
	var streamed strings.Builder
	var final a2a.TaskState
	next := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("streamed go"))
	next.ContextID = sent.ContextID
	for ev, err := range client.SendStreamingMessage(authed, &a2a.SendMessageRequest{Message: next}) {
		if err != nil {
			t.Fatalf("SendStreamingMessage: %v", err)
		}
		kinds = append(kinds, fmt.Sprintf("%T", ev))
		switch e := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			streamed.WriteString(textOf(e.Artifact.Parts))
		case *a2a.TaskStatusUpdateEvent:
			final = e.Status.State
		}
	}
	if final != a2a.TaskStateCompleted || streamed.String() != "I have seen 2 earlier messages. You said: streamed go" || kinds[0] != "*a2a.Task" {
		t.Errorf("SendStreamingMessage: %v, %q, %v", final, streamed.String(), kinds)
	}

	got, err := client.GetTask(authed, &a2a.GetTaskRequest{ID: sent.ID})
	if err != nil || got.ID != sent.ID || replyOf(got) != replyOf(sent) {
		t.Errorf("GetTask = %+v, %v", got, err)
	}
	list, err := client.ListTasks(authed, &a2a.ListTasksRequest{ContextID: sent.ContextID, PageSize: 1})
	if err != nil || len(list.Tasks) != 1 || list.TotalSize != 2 || list.NextPageToken == "" {
		t.Fatalf("ListTasks page 1 = %+v, %v", list, err)
	}
	page2, err := client.ListTasks(authed, &a2a.ListTasksRequest{ContextID: sent.ContextID, PageSize: 1, PageToken: list.NextPageToken})
	if err != nil || len(page2.Tasks) != 1 || page2.Tasks[0].ID != sent.ID || page2.NextPageToken != "" {
		t.Errorf("ListTasks page 2 = %+v, %v", page2, err)
	}
	if _, err := client.GetTask(ctx, &a2a.GetTaskRequest{ID: sent.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask by another caller: %v, want TaskNotFound", err)
	}
	if _, err := client.CancelTask(authed, &a2a.CancelTaskRequest{ID: sent.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("CancelTask of a finished task: %v, want TaskNotCancelable", err)
	}

	// A running task: returned at once, told to the push URL, followed,
	// canceled while it runs.
	before := canceled.Load()
	block := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("block"))
	block.ContextID = sent.ContextID
	res, err = client.SendMessage(authed, &a2a.SendMessageRequest{Message: block, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	if err != nil {
		t.Fatalf("SendMessage (returnImmediately): %v", err)
	}
	running := res.(*a2a.Task)
	if running.Status.State.Terminal() {
		t.Fatalf("running task = %+v", running)
	}
	if _, err := client.CreateTaskPushConfig(authed, &a2a.PushConfig{TaskID: running.ID, URL: hook, Token: "go-push-token"}); err != nil {
		t.Fatalf("CreateTaskPushConfig: %v", err)
	}
	cancelErr := make(chan error, 1)
	first := true
	var subFinal a2a.TaskState
	for ev, err := range client.SubscribeToTask(authed, &a2a.SubscribeToTaskRequest{ID: running.ID}) {
		if err != nil {
			t.Fatalf("SubscribeToTask: %v", err)
		}
		if first { // the task; cancel it once the model on B has the request
			if _, isTask := ev.(*a2a.Task); !isTask {
				t.Errorf("first SubscribeToTask event %T, want the task", ev)
			}
			first = false
			go func() {
				select {
				case <-started:
				case <-ctx.Done():
				}
				_, err := client.CancelTask(authed, &a2a.CancelTaskRequest{ID: running.ID})
				cancelErr <- err
			}()
		}
		if e, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			subFinal = e.Status.State
		}
	}
	if err := <-cancelErr; err != nil || subFinal != a2a.TaskStateCanceled {
		t.Errorf("CancelTask of a running task: %v; the stream ended %v", err, subFinal)
	}
	if p := waitPush(t, pushes, string(running.ID), "TASK_STATE_CANCELED"); p.token != "go-push-token" {
		t.Errorf("push notification token = %q", p.token)
	}
	waitfor.Until(t, 10*time.Second, "the cancel to reach the model on B", func() bool { return canceled.Load() > before })

	ext, err := client.GetExtendedAgentCard(authed, &a2a.GetExtendedAgentCardRequest{})
	if err != nil || !slices.ContainsFunc(ext.Skills, func(s a2a.AgentSkill) bool { return s.ID == "my_tasks" }) {
		t.Errorf("GetExtendedAgentCard = %+v, %v", ext, err)
	}
}
