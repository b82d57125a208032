package portal_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/runtime"
	. "github.com/agentsite/agentsite/handlers/handlertest"
	"github.com/agentsite/agentsite/store"
	"github.com/agentsite/agentsite/web"
)

// TestChatSteps renders a conversation whose agent asked others: each
// stored step is a collapsible line in its place, its summary naming the
// agent and the reply; a step whose JSON is unreadable is a plain "step"
// line; a reply holding markup stays text.
func TestChatSteps(t *testing.T) {
	e := NewChat(t)
	id := e.SeedEcho("planner", "Planner")
	e.Signup("dora", "password-dora-1")
	u, err := e.Store.GetUserByHandle(t.Context(), "dora")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	at := time.Now().Add(-time.Hour).UTC()
	if _, err := e.Store.CreateConversation(ctx, store.Conversation{ID: "csteps", AgentID: id, OwnerKey: "user:" + strconv.FormatInt(u.ID, 10), Title: "steps", CreatedAt: at, UpdatedAt: at}); err != nil {
		t.Fatal(err)
	}
	hostile := "<script>alert(1)</script> & <b>bold</b>"
	msgs := []store.Message{
		{Role: agent.RoleUser, Text: "what is 6*7, and the weather?"},
		{Role: agent.RoleStep, Text: StepJSON(t, agent.Step{Tool: runtime.ToolFindAgents, Text: "calculator", Reply: "3 agents found", Done: true})},
		{Role: agent.RoleStep, Text: StepJSON(t, agent.Step{Tool: runtime.ToolAskAgent, AgentID: "calc-id", AgentName: "Calculator", Host: "node b3c4d5", Text: "6*7", Reply: "42", Done: true})},
		{Role: agent.RoleStep, Text: `{"tool":"ask_agent","text":`}, // cut short
		{Role: agent.RoleStep, Text: StepJSON(t, agent.Step{Tool: runtime.ToolAskAgent, AgentID: "weather-id", Text: "Paris?", Error: "The agent is offline.", Done: true})},
		{Role: agent.RoleStep, Text: StepJSON(t, agent.Step{Tool: "rm_rf", Text: "x", Done: true})},
		{Role: agent.RoleStep, Text: StepJSON(t, agent.Step{Tool: runtime.ToolAskAgent, AgentID: "evil-id", AgentName: "<i>Evil</i>", Host: "this node", Text: "hi", Reply: hostile, Done: true})},
		{Role: agent.RoleStep, Text: StepJSON(t, agent.Step{Tool: runtime.StepToolCall, Name: "forecast", Server: "tools.example.com/mcp", Text: `{"city":"Paris"}`, Reply: "no data", Done: true, DurationMS: 12})},
		{Role: agent.RoleAgent, Text: "42, and no weather."},
	}
	for i, m := range msgs {
		m.ConversationID, m.CreatedAt = "csteps", at.Add(time.Duration(i)*time.Second)
		if _, err := e.Store.AppendMessage(ctx, m); err != nil {
			t.Fatal(err)
		}
	}

	resp := e.Do(http.MethodGet, "/chat/"+id+"?c=csteps", nil)
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "<script>alert") || strings.Contains(string(body), "<b>bold") || strings.Contains(string(body), "<i>Evil") {
		t.Error("step text is not escaped")
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %.1000s", resp.StatusCode, body)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	CheckCSPClean(t, doc)
	if n := doc.Find("script").Not("[src]").Length(); n != 0 {
		t.Errorf("%d inline scripts on the page", n)
	}

	want := []StepLine{
		{Tool: "find_agents", State: "done", Summary: "searched the catalogue: calculator → 3 agents found", Question: "calculator", Reply: "3 agents found"},
		{Tool: "ask_agent", State: "done", Summary: "asked Calculator on node b3c4d5: 6*7 → 42", Question: "6*7", Reply: "42"},
		{State: "unknown", Summary: "step"},
		{Tool: "ask_agent", State: "failed", Summary: "asked weather-id: Paris? → failed: The agent is offline.", Question: "Paris?", Reply: "The agent is offline."},
		{State: "unknown", Summary: "step"},
		{Tool: "ask_agent", State: "done", Summary: "asked <i>Evil</i> on this node: hi → " + hostile, Question: "hi", Reply: hostile},
		{Tool: "call_tool", State: "done", Summary: `called forecast on tools.example.com/mcp: {"city":"Paris"} → no data`, Question: `{"city":"Paris"}`, Reply: "no data"},
	}
	got := ChatSteps(doc)
	if len(got) != len(want) {
		t.Fatalf("%d step lines, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("step %d = %+v\nwant %+v", i, got[i], want[i])
		}
	}

	// In order, in their place between the message and the reply; each
	// stored line has its id and starts closed.
	var order []string
	MustTestid(t, doc, "messages").Children().Each(func(_ int, s *goquery.Selection) {
		order = append(order, s.AttrOr("data-testid", "")+":"+s.AttrOr("data-role", s.AttrOr("data-state", "")))
	})
	wantOrder := "[message:user step:done step:done step:unknown step:failed step:unknown step:done step:done message:agent]"
	if fmt.Sprint(order) != wantOrder {
		t.Errorf("conversation order = %v\nwant %s", order, wantOrder)
	}
	Testid(doc, "step").Each(func(i int, s *goquery.Selection) {
		if _, ok := s.Attr("data-message-id"); !ok {
			t.Errorf("step %d has no data-message-id", i)
		}
		if _, open := s.Find("details").Attr("open"); open {
			t.Errorf("step %d is open", i)
		}
	})
	if got := ChatMessages(doc); fmt.Sprint(got) != fmt.Sprint([][2]string{{"user", msgs[0].Text}, {"agent", msgs[8].Text}}) {
		t.Errorf("messages = %q", got)
	}
	checkStepTemplates(t, doc)
}

// checkStepTemplates: chat.js finds a line for each tool and state of a
// step frame, with the slots it fills in.
func checkStepTemplates(t *testing.T, doc *goquery.Document) {
	t.Helper()
	root := MustTestid(t, doc, "chat")
	for _, tool := range []string{runtime.ToolAskAgent, runtime.ToolFindAgents, runtime.StepToolCall} {
		for _, state := range []string{"pending", "done", "failed"} {
			name := "step-" + tool + "-" + state
			tm := root.Find(fmt.Sprintf(`template[data-testid="chat-template"][data-template=%q]`, name))
			li := tm.Children()
			if tm.Length() != 1 || li.AttrOr("data-testid", "") != "step" || li.AttrOr("data-tool", "") != tool || li.AttrOr("data-state", "") != state {
				h, _ := goquery.OuterHtml(tm)
				t.Errorf("template %s: %s", name, h)
				continue
			}
			slots := []string{".step-text", ".step-question"}
			if tool == runtime.ToolAskAgent || tool == runtime.StepToolCall {
				slots = append(slots, ".step-agent", ".step-host", ".step-where")
			}
			if state != "pending" {
				slots = append(slots, ".step-result", ".step-reply")
			}
			for _, sl := range slots {
				if li.Find(sl).Length() != 1 {
					t.Errorf("template %s has no %s", name, sl)
				}
			}
			if busy := li.AttrOr("aria-busy", "") == "true"; busy != (state == "pending") {
				t.Errorf("template %s aria-busy = %v", name, busy)
			}
		}
	}
}

// TestChatStepToolNames: the page and chat.js pick a step's line by the
// runtime's tool names.
func TestChatStepToolNames(t *testing.T) {
	if web.StepToolAsk != runtime.ToolAskAgent || web.StepToolFind != runtime.ToolFindAgents || web.StepToolCall != runtime.StepToolCall {
		t.Errorf("web step tools %q, %q; runtime tools %q, %q", web.StepToolAsk, web.StepToolFind, runtime.ToolAskAgent, runtime.ToolFindAgents)
	}
}

// TestRegisterDelegateAgent ticks "May call other agents" for an llm
// agent: the backend keeps it, the edit form shows it ticked, and saving
// without it clears it. A builtin agent ignores the box.
func TestRegisterDelegateAgent(t *testing.T) {
	e := New(t)
	e.Signup("erin", "password-erin-1")

	doc := e.Page("/register", http.StatusOK)
	box := doc.Find(`#backend-delegate`)
	if box.AttrOr("type", "") != "checkbox" || box.AttrOr("name", "") != "backend_delegate" || box.Is("[checked]") {
		t.Fatalf("register form's delegate box: %d found, type %q, name %q, checked %v", box.Length(), box.AttrOr("type", ""), box.AttrOr("name", ""), box.Is("[checked]"))
	}
	if kinds := box.Closest("fieldset").AttrOr("data-kinds", ""); kinds != "llm" {
		t.Errorf("the delegate box is shown for kinds %q, want llm", kinds)
	}
	help := Text(doc.Find("#backend-delegate-help"))
	if !strings.Contains(help, "8 calls a turn") || !strings.Contains(help, "3 hops") {
		t.Errorf("delegate help = %q, want the limits", help)
	}

	llm := []string{"backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_model", "gpt-x"}
	resp := e.PostForm("/register", RegisterForm(append(llm, "backend_delegate", "true")...))
	WantStatus(t, resp, http.StatusSeeOther)
	id := strings.TrimPrefix(Location(t, resp), "/agents/")
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || !b.Delegate {
		t.Fatalf("backend after registering with the box ticked = %v, %v", b, err)
	}
	editPath := "/account/agents/" + id + "/edit"
	doc = e.Page(editPath, http.StatusOK)
	if !doc.Find(`#backend-delegate`).Is("[checked]") {
		t.Error("the edit form of a delegate agent does not show the box ticked")
	}
	// An error keeps the box as ticked.
	doc = ParsePage(t, e.PostForm(editPath, RegisterForm("backend_kind", "llm", "backend_url", "https://api.example.com/v1", "backend_delegate", "true")), http.StatusUnprocessableEntity)
	if !doc.Find(`#backend-delegate`).Is("[checked]") {
		t.Error("a refused edit drops the ticked box")
	}

	WantStatus(t, e.PostForm(editPath, RegisterForm(llm...)), http.StatusSeeOther)
	if b, err := e.Store.GetBackend(t.Context(), id); err != nil || b.Delegate {
		t.Errorf("backend after saving with the box unticked = %v, %v", b, err)
	}
	if doc = e.Page(editPath, http.StatusOK); doc.Find(`#backend-delegate`).Is("[checked]") {
		t.Error("the edit form shows the box ticked after it was cleared")
	}

	// Only an llm agent calls others: the box of a builtin is ignored.
	resp = e.PostForm("/register", RegisterForm("name", "echo-bot", "backend_delegate", "true"))
	WantStatus(t, resp, http.StatusSeeOther)
	if b, err := e.Store.GetBackend(t.Context(), strings.TrimPrefix(Location(t, resp), "/agents/")); err != nil || b.Delegate {
		t.Errorf("builtin backend with the box ticked = %v, %v", b, err)
	}
}
