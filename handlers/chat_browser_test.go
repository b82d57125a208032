package handlers

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
)

// TestChatBrowser drives AgentChat in chromium: a message typed and sent
// with Enter goes over the WebSocket, the echo streams back into the agent
// bubble, a refused message and a failed answer each get an error line that
// says what became of the message, and after a reload the conversation is
// still there, without a console error or CSP violation along the way.
func TestChatBrowser(t *testing.T) {
	path := chromiumPath(t)
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")
	b := newBrowser(t, path, 60*time.Second)

	b.do("open the chat page",
		chromedp.Navigate(e.ts.URL+"/chat/"+id),
		chromedp.WaitVisible(tid("composer-input")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.assertClean("chat page loaded")

	b.do("send with Enter",
		chromedp.Focus(tid("composer-input")),
		chromedp.SendKeys(tid("composer-input"), "hello planet\r"),
	)
	// The user's message shows at once; the reply streams into the agent
	// bubble and is final once it has its stored id (the done frame).
	b.do("wait for the user message",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="user"]`)),
	)
	b.do("wait for the reply",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	reply := run(b, "read the reply", chromedp.Text(chromedp.CSS(`[data-testid="message"][data-role="agent"] .msg-text`)))
	if strings.TrimSpace(reply) != "hello planet" {
		t.Errorf("reply bubble = %q, want %q", reply, "hello planet")
	}
	if left := run(b, "read the composer", chromedp.Value(tid("composer-input"))); left != "" {
		t.Errorf("composer still holds %q after sending", left)
	}
	if n := run(b, "count typing indicators", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="typing"]').length`)); n != 0 {
		t.Errorf("%d typing indicators left after the reply", n)
	}
	if disabled := run(b, "send button state", chromedp.Evaluate[bool](`document.querySelector('[data-testid="composer-send"]').disabled`)); disabled {
		t.Error("send stays disabled after the turn")
	}

	// The address now names the conversation, and the side list has it.
	loc := run(b, "read the location", chromedp.Location())
	u, err := url.Parse(loc)
	if err != nil || u.Path != "/chat/"+id || u.Query().Get("c") == "" {
		t.Fatalf("location after the turn = %q", loc)
	}
	conv := u.Query().Get("c")
	current := run(b, "read the side list", chromedp.AttributeValue(chromedp.CSS(`[data-testid="conversation"][data-current="true"]`), "data-conversation-id"))
	if current.Value != conv {
		t.Errorf("current side-list item = %q, want %q", current.Value, conv)
	}
	b.assertClean("after the turn")
	chatShot(b, "chat-after-turn.png")

	// A message the server refuses: the error shows inline, in the
	// conversation, and the text goes back into the composer.
	long := strings.Repeat("x", chat.MaxMessageBytes+100)
	b.do("send a message that is too long",
		chromedp.SetValue(tid("composer-input"), long),
		chromedp.SendKeys(tid("composer-input"), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="error"][data-code="message_too_large"]`)),
	)
	if got := run(b, "read the composer", chromedp.Value(tid("composer-input"))); got != long {
		t.Errorf("refused text not restored: composer holds %d characters, want %d", len(got), len(long))
	}
	if n := run(b, "count unsent messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"][data-unsent="true"]').length`)); n != 1 {
		t.Errorf("%d messages marked unsent, want 1", n)
	}
	refused := run(b, "read the error line", chromedp.Evaluate[errorLine](readErrorLine))
	if refused.Label != "Not sent: your message was not saved." || refused.Text != "Messages are limited to 8 KiB." || !refused.Retry {
		t.Errorf("error line for a refused message = %+v", refused)
	}
	b.assertClean("after a refused message")
	chatShot(b, "chat-refused.png")

	// Reload: the server renders the same conversation.
	b.do("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	type msg struct{ Role, Text string }
	msgs := run(b, "read the history", chromedp.Evaluate[[]msg](`Array.from(document.querySelectorAll('[data-testid="message"]'),
		m => ({Role: m.dataset.role, Text: m.querySelector('.msg-text').textContent}))`))
	want := []msg{{"user", "hello planet"}, {"agent", "hello planet"}}
	if len(msgs) != len(want) || msgs[0] != want[0] || msgs[1] != want[1] {
		t.Errorf("history after reload = %+v, want %+v", msgs, want)
	}
	if got := run(b, "read the conversation id", chromedp.AttributeValue(tid("chat"), "data-conversation-id")); got.Value != conv {
		t.Errorf("data-conversation-id after reload = %q, want %q", got.Value, conv)
	}
	b.assertClean("after the reload")
	chatShot(b, "chat-after-reload.png")

	// The agent fails to answer: the message is saved, the line says so,
	// and Try again sends it once more.
	answerer := e.s.Chat.Local
	e.s.Chat.Local = failingAnswerer{err: agent.ErrBackendUnavailable} // the next frame orders this before the turn
	b.do("send a message the agent fails on",
		chromedp.SendKeys(tid("composer-input"), "again\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="error"][data-code="agent_unavailable"]`)),
	)
	failed := run(b, "read the error line", chromedp.Evaluate[errorLine](readErrorLine))
	if failed.Label != "Saved, but the agent could not answer:" || failed.Text != "The agent could not answer right now. Try again later." || !failed.Retry {
		t.Errorf("error line for a failed answer = %+v", failed)
	}
	if got := run(b, "read the composer", chromedp.Value(tid("composer-input"))); got != "" {
		t.Errorf("composer holds %q after a stored message failed", got)
	}
	chatShot(b, "chat-failed-answer.png")
	e.s.Chat.Local = answerer
	b.do("try again",
		chromedp.Click(chromedp.CSS(`[data-testid="message"][data-code="agent_unavailable"] [data-testid="message-retry"]`)),
		chatWaitJS(`document.querySelectorAll('[data-testid="message"][data-role="agent"][data-message-id]').length === 2`),
	)
	msgs = run(b, "read the messages", chromedp.Evaluate[[]msg](`Array.from(document.querySelectorAll('[data-testid="message"]'),
		m => ({Role: m.dataset.role, Text: m.querySelector('.msg-text').textContent}))`))
	want = append(want, msg{"user", "again"}, msg{"error", failed.Text}, msg{"user", "again"}, msg{"agent", "again"})
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Errorf("messages after a retry = %+v, want %+v", msgs, want)
	}
	if n := run(b, "count retry buttons", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message-retry"]').length`)); n != 0 {
		t.Errorf("%d retry buttons left after the retry went through", n)
	}
	b.assertClean("after a retry")
}

// errorLine is what the page's last error line says.
type errorLine struct {
	Label, Text string
	Retry       bool
}

const readErrorLine = `(() => {
  const all = document.querySelectorAll('[data-testid="message"][data-role="error"]');
  const m = all[all.length - 1];
  return {Label: m.querySelector('.msg-label').textContent, Text: m.querySelector('.msg-text').textContent,
    Retry: !!m.querySelector('[data-testid="message-retry"]')};
})()`

// chatShot saves a screenshot of the page as name and logs where it went.
func chatShot(b *browser, name string) {
	b.t.Helper()
	p, err := b.screenshot(b.ctx, name)
	if err != nil {
		b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	b.t.Logf("screenshot: %s", p)
}

// wsControl is run in the page before its own scripts: it records every
// WebSocket the page opens (window.__sockets) and, while window.__blockWS
// is true, points new ones at a path of the same origin that refuses the
// handshake (a 404), so a test can drop the connection and keep it down.
const wsControl = `(() => {
  const Native = window.WebSocket;
  window.__sockets = [];
  window.__blockWS = false;
  function Controlled(url, protocols) {
    const ws = new Native(window.__blockWS ? url.replace("/api/v1/chat", "/api/v1/chat-down") : url, protocols);
    window.__sockets.push(ws);
    return ws;
  }
  Controlled.prototype = Native.prototype;
  Object.assign(Controlled, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
  window.WebSocket = Controlled;
})();`

// TestChatBrowserReconnect drops the chat's WebSocket: the page says it is
// reconnecting, a message sent meanwhile is not lost (it stays in the
// composer, with a note, and is not resent by itself), and once the socket
// is back the same text goes through.
func TestChatBrowserReconnect(t *testing.T) {
	path := chromiumPath(t)
	e := newChatServer(t)
	id := e.seedEcho("echo-bot", "Echo Bot")
	b := newBrowser(t, path, 60*time.Second)

	b.do("install the WebSocket control", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: wsControl})
		return err
	}))
	b.do("open the chat page",
		chromedp.Navigate(e.ts.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.do("drop the connection",
		chatEval(`window.__blockWS = true; window.__sockets[window.__sockets.length - 1].close(); true`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="reconnecting"]`)),
	)
	b.do("send while disconnected",
		chromedp.SendKeys(tid("composer-input"), "sent while down\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-error"][data-kind="connection"]`)),
	)
	if got := run(b, "read the composer", chromedp.Value(tid("composer-input"))); got != "sent while down" {
		t.Errorf("composer holds %q after a send while disconnected, want the text kept", got)
	}
	if n := run(b, "count messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"]').length`)); n != 0 {
		t.Errorf("%d messages shown for a send that could not go out", n)
	}
	chatShot(b, "chat-reconnecting.png")

	b.do("let the connection come back",
		chatEval(`window.__blockWS = false; true`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
		chatWaitJS(`document.querySelector('[data-testid="composer-error"]').hidden`),
	)
	if n := run(b, "count messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"]').length`)); n != 0 {
		t.Errorf("%d messages after reconnecting: the message was resent by itself", n)
	}
	b.do("send again",
		chromedp.SendKeys(tid("composer-input"), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	reply := run(b, "read the reply", chromedp.Text(chromedp.CSS(`[data-testid="message"][data-role="agent"] .msg-text`)))
	if strings.TrimSpace(reply) != "sent while down" {
		t.Errorf("reply after reconnecting = %q", reply)
	}
	b.assertClean("after reconnecting")
}

// chatEval runs a script in the page for its effect.
func chatEval(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}

// chatWaitJS waits until expr is true in the page.
func chatWaitJS(expr string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Poll[bool](expr)(ctx, t)
		return chromedp.Void{}, err
	}
}
