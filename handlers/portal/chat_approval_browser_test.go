package portal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatBrowserApproval chats with an llm agent whose notebook tool
// server has a read-only and a destructive tool. Asked to save a note,
// the reply ends with an Approve / Deny card naming the tool, its server
// and the arguments (folded); nothing is saved until Approve is clicked,
// then the turn goes on and streams the result. Deny on the next one
// saves nothing: the MCP server sees no call.
func TestChatBrowserApproval(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	id, notes := e.SeedNotesAgent("", "note-bot")

	b := NewBrowser(t, path, 60*time.Second)
	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.Do("ask to save a note",
		chromedp.SendKeys(Tid("composer-input"), "note buy milk\r"),
		chromedp.WaitVisible(Tid("approval-card")),
	)
	tool := Run(b, "read the tool", chromedp.Text(Tid("approval-tool")))
	server := Run(b, "read the server", chromedp.Text(Tid("approval-server")))
	args := Run(b, "read the arguments", chromedp.Evaluate[string](`document.querySelector('[data-testid="approval-args"]').textContent`))
	if tool != "save_note" || !strings.Contains(server, "/mcp") || args != `{"text":"buy milk"}` {
		t.Errorf("card: tool %q, server %q, args %q", tool, server, args)
	}
	if notes.Saves() != 0 {
		t.Fatalf("save_note ran before approval")
	}
	chatShot(b, "chat-approval.png")

	// A page opened again while the call waits shows its card again.
	b.Do("reload the conversation",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
		chromedp.WaitVisible(Tid("approval-card")),
	)
	if tool := Run(b, "read the tool again", chromedp.Text(Tid("approval-tool"))); tool != "save_note" {
		t.Errorf("card after reload: tool %q, want save_note", tool)
	}

	b.Do("approve",
		chromedp.Click(Tid("approval-approve")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]:last-of-type`)),
	)
	reply := Run(b, "read the reply", chromedp.Evaluate[string](`(() => { const m = document.querySelectorAll('[data-testid="message"][data-role="agent"]'); return m[m.length-1].querySelector('.msg-text').textContent.trim(); })()`))
	if reply != "done: saved: buy milk" || notes.Saves() != 1 {
		t.Errorf("after approve: reply %q, saves %d", reply, notes.Saves())
	}
	if n := Run(b, "count cards", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="approval-card"]').length`)); n != 0 {
		t.Errorf("%d approval cards left after the answer", n)
	}

	b.Do("ask to save another",
		chromedp.SendKeys(Tid("composer-input"), "note sell cow\r"),
		chromedp.WaitVisible(Tid("approval-card")),
	)
	b.Do("deny",
		chromedp.Click(Tid("approval-deny")),
		chromedp.WaitNotPresent(Tid("approval-card")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]:last-of-type`)),
	)
	reply = Run(b, "read the reply", chromedp.Evaluate[string](`(() => { const m = document.querySelectorAll('[data-testid="message"][data-role="agent"]'); return m[m.length-1].querySelector('.msg-text').textContent.trim(); })()`))
	if !strings.Contains(reply, "denied") || notes.Saves() != 1 {
		t.Errorf("after deny: reply %q, saves %d (the server must see no call)", reply, notes.Saves())
	}
	b.AssertClean("after the approvals")
}
