package portal_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatBrowserSteps chats with an llm agent that may call other agents,
// backed by a scripted model that asks the local calculator, then answers.
// The delegation shows in the page as it happens: a pending line while
// the calculator is held back, the finished line once it answered and
// before the model's reply, and the stored line after a reload.
func TestChatBrowserSteps(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	e.Server.Registry.AllowPrivate = true // the fake model is on 127.0.0.1
	calc := e.SeedAgent("", registry.Input{Name: "calc", DisplayName: "Calculator", Description: "Arithmetic.",
		Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "calculator"}}).Record.ID

	// The model asks the calculator, then (once let go) answers with its reply.
	answer := make(chan struct{})
	model := &fakellm.Server{Model: "demo", Script: func(r fakellm.Request) fakellm.Reply {
		results := r.ToolResults()
		if len(results) == 0 {
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("call-1", runtime.ToolAskAgent, map[string]string{"agent_id": calc, "text": "6*7"})}}
		}
		select {
		case <-answer:
		case <-t.Context().Done():
		}
		var res struct{ Reply string }
		_ = json.Unmarshal([]byte(results[0]), &res)
		return fakellm.Reply{Text: "The calculator says " + res.Reply + "."}
	}}
	llm := httptest.NewServer(model)
	t.Cleanup(llm.Close)
	planner := e.SeedAgent("", registry.Input{Name: "planner", DisplayName: "Planner", Description: "Asks others.",
		Backend: agent.Backend{Kind: agent.BackendLLM, URL: llm.URL + "/v1", Model: "demo", Delegate: true}}).Record.ID
	gate := &GatedAnswerer{Next: e.Server.Chat.Local, AgentID: calc, Open: make(chan struct{})}
	e.Server.Chat.Local = gate

	b := NewBrowser(t, path, 60*time.Second)
	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+planner),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.Do("send a message",
		chromedp.SendKeys(Tid("composer-input"), "what is 6*7?\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="step"][data-state="pending"]`)),
	)
	const readSteps = `Array.from(document.querySelectorAll('[data-testid="messages"] > li'), li => {
  const s = li.querySelector('.step-summary');
  let text = '';
  if (s) { text = s.innerText; } else if (li.querySelector('.msg-text')) { text = li.querySelector('.msg-text').textContent; }
  return {Kind: li.dataset.testid + ':' + (li.dataset.role || li.dataset.state), Text: text.trim(), Stored: li.hasAttribute('data-message-id')};
})`
	type line struct {
		Kind, Text string
		Stored     bool
	}
	got := Run(b, "read the pending step", chromedp.Evaluate[[]line](readSteps))
	want := []line{{"message:user", "what is 6*7?", false}, {"step:pending", "asking Calculator on this node: 6*7", false}, {"message:agent", "", false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("while the calculator works: %+v\nwant %+v", got, want)
	}
	chatShot(b, "chat-step-pending.png")

	close(gate.Open)
	b.Do("wait for the finished step",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="step"][data-state="done"]`)),
	)
	got = Run(b, "read the finished step", chromedp.Evaluate[[]line](readSteps))
	want[1] = line{"step:done", "asked Calculator on this node: 6*7 → 42", false}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("before the reply: %+v\nwant %+v", got, want)
	}

	close(answer)
	b.Do("wait for the reply",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	got = Run(b, "read the turn", chromedp.Evaluate[[]line](readSteps))
	want[2] = line{"message:agent", "The calculator says 42.", true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the reply: %+v\nwant %+v", got, want)
	}
	b.AssertClean("after the turn")
	chatShot(b, "chat-step-done.png")

	b.Do("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="step"][data-state="done"][data-message-id]`)),
	)
	got = Run(b, "read the stored turn", chromedp.Evaluate[[]line](readSteps))
	want = []line{{"message:user", "what is 6*7?", true}, {"step:done", "asked Calculator on this node: 6*7 → 42", true}, {"message:agent", "The calculator says 42.", true}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after a reload: %+v\nwant %+v", got, want)
	}
	b.Do("open the step",
		chromedp.Click(chromedp.CSS(`[data-testid="step"] .step-summary`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="step"] .step-reply`)),
	)
	if reply := Run(b, "read the step's reply", chromedp.Text(chromedp.CSS(`[data-testid="step"] .step-reply`))); reply != "42" {
		t.Errorf("opened step reply = %q, want 42", reply)
	}
	b.AssertClean("after the reload")
	chatShot(b, "chat-step-stored.png")
}
