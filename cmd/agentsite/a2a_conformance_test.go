package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// a2aBinding sends A2A 1.0 requests over one of the node's bindings and
// gives back the result (or the error) as plain JSON, so the tests read
// the wire as the conformance kit does.
type a2aBinding struct {
	name     string
	agentURL string
}

// a2aReply is a SendMessage result, a GetTask or CancelTask task, or an
// error: its status is the HTTP status.
type a2aReply struct {
	status int
	result map[string]any
	err    map[string]any // JSON-RPC's error, or REST's {"error": …}
}

func (b a2aBinding) do(t *testing.T, method, rpc, path string, params any) a2aReply {
	t.Helper()
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	target, verb := b.agentURL+"/"+path, http.MethodPost
	if b.name == "jsonrpc" {
		target = b.agentURL
		body, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": rpc, "params": json.RawMessage(body)})
	} else if method == http.MethodGet {
		verb, body = http.MethodGet, nil
	}
	req, err := http.NewRequestWithContext(t.Context(), verb, target, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %d, not JSON: %v", b.name, rpc, resp.StatusCode, err)
	}
	r := a2aReply{status: resp.StatusCode}
	if b.name == "jsonrpc" {
		r.result, _ = out["result"].(map[string]any)
		r.err, _ = out["error"].(map[string]any)
	} else if e, ok := out["error"].(map[string]any); ok {
		r.err = e
	} else {
		r.result = out
	}
	return r
}

// send is SendMessage of text with message id id, on taskID when set.
func (b a2aBinding) send(t *testing.T, id, taskID, text string, extra map[string]any) a2aReply {
	t.Helper()
	msg := map[string]any{"role": "ROLE_USER", "messageId": id, "parts": []any{map[string]any{"text": text}}}
	if taskID != "" {
		msg["taskId"] = taskID
	}
	params := map[string]any{"message": msg}
	for k, v := range extra {
		params[k] = v
	}
	return b.do(t, http.MethodPost, "SendMessage", "message:send", params)
}

// task is the reply's task; the test fails when it has none.
func (r a2aReply) task(t *testing.T) map[string]any {
	t.Helper()
	task, ok := r.result["task"].(map[string]any)
	if !ok {
		t.Fatalf("no task in the reply: %d %v %v", r.status, r.result, r.err)
	}
	return task
}

func taskState(task map[string]any) string {
	st, _ := task["status"].(map[string]any)
	s, _ := st["state"].(string)
	return s
}

// firstPart is the first part of the task's last artifact.
func firstPart(t *testing.T, task map[string]any) map[string]any {
	t.Helper()
	arts, _ := task["artifacts"].([]any)
	if len(arts) == 0 {
		t.Fatalf("task without artifacts: %v", task)
	}
	parts, _ := arts[len(arts)-1].(map[string]any)["parts"].([]any)
	if len(parts) == 0 {
		t.Fatalf("artifact without parts: %v", arts)
	}
	return parts[0].(map[string]any)
}

// partTexts are the texts of messages' first parts, in order.
func partTexts(ms []any) []string {
	var out []string
	for _, m := range ms {
		parts, _ := m.(map[string]any)["parts"].([]any)
		if len(parts) > 0 {
			s, _ := parts[0].(map[string]any)["text"].(string)
			out = append(out, s)
		}
	}
	return out
}

// startClosedNode is startNode in a temporary directory, closed before
// the directory is removed.
func startClosedNode(t *testing.T, flags ...string) *Main {
	t.Helper()
	m := startNode(t, t.TempDir(), flags...)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// conformanceAgentURL is the url of the node's conformance agent, found
// as make a2a-tck finds it; "" when the node lists none.
func conformanceAgentURL(t *testing.T, m *Main) string {
	t.Helper()
	var list agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents?q=a2a-conformance", &list)
	for _, a := range list.Agents {
		if a.Name == "a2a-conformance" {
			return m.HTTPURL() + "/a2a/" + a.ID
		}
	}
	return ""
}

// The conformance agent (--conformance-agent) behaves as the A2A
// conformance kit's system under test, on the node's task machinery and
// over both A2A 1.0 bindings: a task that waits for input resumes with
// the next message on it, artifacts carry text, file (bytes and url) and
// data parts, a reply can be a Message, a waiting task can be canceled,
// and a push config hears the resumed task complete.
func TestConformanceAgentOverA2A(t *testing.T) {
	hook, pushes := pushReceiver(t)
	m := startClosedNode(t, "--conformance-agent", "--allow-push-endpoint", "127.0.0.1/32", "--chat-rate-limit", "1000")
	agentURL := conformanceAgentURL(t, m)
	if agentURL == "" {
		t.Fatal("a node started with --conformance-agent lists no a2a-conformance agent")
	}
	for _, b := range []a2aBinding{{"jsonrpc", agentURL}, {"http+json", agentURL}} {
		t.Run(b.name, func(t *testing.T) {
			// Input required, then resumed on the same task.
			first := b.send(t, "tck-input-required-1", "", "start", nil).task(t)
			if taskState(first) != "TASK_STATE_INPUT_REQUIRED" {
				t.Fatalf("tck-input-required: %v, want TASK_STATE_INPUT_REQUIRED", first)
			}
			taskID := first["id"].(string)
			prompt := partTexts([]any{first["status"].(map[string]any)["message"]})
			if len(prompt) != 1 || prompt[0] == "" {
				t.Errorf("input-required status message = %v, want the agent's prompt", first["status"])
			}
			again := b.send(t, "tck-input-required-2", taskID, "more", nil).task(t)
			if again["id"] != taskID || taskState(again) != "TASK_STATE_INPUT_REQUIRED" {
				t.Fatalf("second input on the task: %v", again)
			}
			done := b.send(t, "tck-complete-task-3", taskID, "last", nil).task(t)
			if done["id"] != taskID || done["contextId"] != first["contextId"] || taskState(done) != "TASK_STATE_COMPLETED" {
				t.Fatalf("follow-up on the waiting task: %v, want task %s completed", done, taskID)
			}
			if got := firstPart(t, done)["text"]; got != "Hello from TCK" {
				t.Errorf("reply artifact = %v, want Hello from TCK", got)
			}
			hist := partTexts(done["history"].([]any))
			if len(hist) != 6 || hist[0] != "start" || hist[2] != "more" || hist[4] != "last" || hist[5] != "Hello from TCK" {
				t.Errorf("history = %q, want the three messages, the two prompts between and the reply", hist)
			}
			// The task now ended: it takes no further input.
			if r := b.send(t, "tck-complete-task-4", taskID, "after", nil); r.err == nil || !strings.Contains(fmt.Sprint(r.err), "takes no further input") {
				t.Errorf("a message on a completed task: %d %v %v, want refused", r.status, r.result, r.err)
			}

			// Artifacts of each part kind.
			raw := base64.StdEncoding.EncodeToString([]byte("Generated file content"))
			for prefix, want := range map[string]map[string]any{
				"tck-artifact-text":     {"text": "Generated text content"},
				"tck-artifact-file":     {"raw": raw, "filename": "output.txt", "mediaType": "text/plain"},
				"tck-artifact-file-url": {"url": "https://example.com/output.txt", "filename": "output.txt", "mediaType": "text/plain"},
				"tck-artifact-data":     {"data": map[string]any{"key": "value", "count": float64(42)}, "mediaType": "application/json"},
			} {
				task := b.send(t, prefix+"-1", "", "make it", nil).task(t)
				if got := firstPart(t, task); taskState(task) != "TASK_STATE_COMPLETED" || !reflect.DeepEqual(got, want) {
					t.Errorf("%s: %s, part %v, want %v", prefix, taskState(task), got, want)
				}
			}

			// A reply that stands alone is a Message, not a Task.
			r := b.send(t, "tck-message-response-1", "", "hi", nil)
			msg, ok := r.result["message"].(map[string]any)
			if !ok || r.result["task"] != nil || partTexts([]any{msg})[0] != "Direct message response" || msg["role"] != "ROLE_AGENT" {
				t.Errorf("tck-message-response: %v, want a message", r.result)
			}

			// A task waiting for input is canceled at once.
			waiting := b.send(t, "tck-input-required-5", "", "wait", nil).task(t)
			id := waiting["id"].(string)
			c := b.do(t, http.MethodPost, "CancelTask", "tasks/"+id+":cancel", map[string]any{"id": id})
			if c.err != nil || taskState(c.result) != "TASK_STATE_CANCELED" {
				t.Errorf("cancel a waiting task: %v %v", c.result, c.err)
			}

			// A push config given with the first message hears the task
			// its follow-up completes.
			cfg := map[string]any{"configuration": map[string]any{"taskPushNotificationConfig": map[string]any{
				"url": hook, "token": "tok-" + b.name}}}
			pt := b.send(t, "tck-input-required-6", "", "push me", cfg).task(t)
			b.send(t, "tck-complete-task-7", pt["id"].(string), "go on", nil)
			if p := waitPush(t, pushes, pt["id"].(string), "TASK_STATE_COMPLETED"); p.token != "tok-"+b.name {
				t.Errorf("push token = %q", p.token)
			}

			// A file part, which no agent here takes: ContentTypeNotSupported.
			file := map[string]any{"message": map[string]any{"role": "ROLE_USER", "messageId": "tck-send-003",
				"parts": []any{map[string]any{"raw": "dGNr", "mediaType": "application/x-unsupported"}}}}
			u := b.do(t, http.MethodPost, "SendMessage", "message:send", file)
			code := fmt.Sprint(u.err["code"])
			if b.name == "jsonrpc" && code != "-32005" || b.name != "jsonrpc" && (u.status != http.StatusUnsupportedMediaType || code != "415") {
				t.Errorf("a file part: %d %v, want ContentTypeNotSupportedError", u.status, u.err)
			}
		})
	}
}

// Streamed, the conformance agent's chunked artifact arrives as two
// artifact updates of one artifact, the second appended and the last.
func TestConformanceAgentStreamsChunks(t *testing.T) {
	m := startClosedNode(t, "--conformance-agent")
	agentURL := conformanceAgentURL(t, m)
	body := `{"message":{"role":"ROLE_USER","messageId":"tck-stream-artifact-chunked-1","parts":[{"text":"go"}]}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, agentURL+"/message:stream", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chunks []string
	var last string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			ArtifactUpdate *struct {
				Append, LastChunk bool
				Artifact          struct {
					Parts []struct{ Text string }
				}
			}
			StatusUpdate *struct{ Status struct{ State string } }
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		if a := ev.ArtifactUpdate; a != nil {
			chunks = append(chunks, fmt.Sprintf("%s append=%t last=%t", a.Artifact.Parts[0].Text, a.Append, a.LastChunk))
		}
		if s := ev.StatusUpdate; s != nil {
			last = s.Status.State
		}
	}
	want := []string{"chunk-1  append=false last=false", "chunk-2 append=true last=true"}
	if !reflect.DeepEqual(chunks, want) || last != "TASK_STATE_COMPLETED" {
		t.Errorf("stream: chunks %q, last state %s; want %q then completed", chunks, last, want)
	}
}

// Without --conformance-agent (off by default) a node has no
// conformance agent.
func TestConformanceAgentOffByDefault(t *testing.T) {
	m := startClosedNode(t)
	if m.Config.ConformanceAgent {
		t.Fatal("--conformance-agent is on by default")
	}
	if u := conformanceAgentURL(t, m); u != "" {
		t.Fatalf("a node without --conformance-agent lists one at %s", u)
	}
	var list agentList
	getJSON(t, m.HTTPURL()+"/api/v1/agents?q="+url.QueryEscape("conformance"), &list)
	if len(list.Agents) != 0 {
		t.Errorf("agents matching conformance: %+v", list.Agents)
	}
}
