package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	"github.com/agentsite/agentsite/agent/runtime/fakenotes"
)

// The official A2A JS SDK, unmodified, answers a tool approval: a turn
// whose model wants the notebook's destructive save_note leaves the task
// input-required with the call as a data part and nothing saved; the
// SDK's data part approving it on the same task runs the call and the task
// completes with the reply; "deny" on a second task completes it without
// the call (docs/protocols.md, the A2A section on approvals).
func TestA2AJSSDKApprovesATool(t *testing.T) {
	a2aJSClient(t) // skips (or fails under CI) without node and the SDK
	script, err := filepath.Abs(filepath.Join(a2aJSDir, "a2a-approval.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	notes := fakenotes.New()
	notesSrv := httptest.NewServer(notes.Handler())
	t.Cleanup(notesSrv.Close)
	notesURL := notesSrv.URL + "/mcp"
	n := startClusterNode(t, nodeOpts{extra: []string{"--allow-private-endpoints"}})
	bot := n.registerBackend("note-bot", map[string]any{"kind": "llm", "model": "demo",
		"url":   serveModel(t, &fakellm.Server{Model: "demo", Script: fakenotes.Script}),
		"tools": []map[string]any{{"url": notesURL}}})

	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", script, n.m.HTTPURL()+"/a2a/"+bot.ID+"/", "note buy milk", "note sell cow").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("node a2a-approval.mjs: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node a2a-approval.mjs: %v", err)
	}
	type seen struct {
		TaskID, State, Prompt, Reply string
		Data                         []map[string]any
	}
	var got struct{ Asked, Approved, Asked2, Denied *seen }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	a := got.Asked
	if a.State != "input-required" || !strings.Contains(a.Prompt, "save_note") || len(a.Data) == 0 {
		t.Fatalf("the first send: %+v, want input-required asking about save_note with the call as data", a)
	}
	ap, _ := a.Data[0]["approval"].(map[string]any)
	if ap["tool"] != "save_note" || ap["id"] == "" || !strings.Contains(ap["args"].(string), "buy milk") {
		t.Errorf("the pending call: %+v", ap)
	}
	if got.Approved == nil {
		t.Fatal("the script found no approval to answer")
	}
	if p := got.Approved; p.TaskID != a.TaskID || p.State != "completed" || !strings.Contains(p.Reply, "saved: buy milk") {
		t.Errorf("after approval: %+v, want the same task completed with the saved note", p)
	}
	if d := got.Denied; got.Asked2.State != "input-required" || d.TaskID != got.Asked2.TaskID || d.State != "completed" || !strings.Contains(d.Reply, "denied") {
		t.Errorf("deny: asked %+v, then %+v; want the task completed saying it was denied", got.Asked2, d)
	}
	if s := notes.Saves(); s != 1 {
		t.Errorf("the notebook saved %d notes, want 1 (the approved one; none for the denied)", s)
	}
}
