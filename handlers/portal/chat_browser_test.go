package portal_test

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
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatBrowser drives AgentChat in chromium: a message typed and sent
// with Enter goes over the WebSocket, the echo streams back into the agent
// bubble, a refused message and a failed answer each get an error line that
// says what became of the message, and after a reload the conversation is
// still there, without a console error or CSP violation along the way.
func TestChatBrowser(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	b := NewBrowser(t, path, 60*time.Second)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(Tid("composer-input")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.AssertClean("chat page loaded")

	b.Do("send with Enter",
		chromedp.Focus(Tid("composer-input")),
		chromedp.SendKeys(Tid("composer-input"), "hello planet\r"),
	)
	// The user's message shows at once; the reply streams into the agent
	// bubble and is final once it has its stored id (the done frame).
	b.Do("wait for the user message",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="user"]`)),
	)
	b.Do("wait for the reply",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	reply := Run(b, "read the reply", chromedp.Text(chromedp.CSS(`[data-testid="message"][data-role="agent"] .msg-text`)))
	if strings.TrimSpace(reply) != "hello planet" {
		t.Errorf("reply bubble = %q, want %q", reply, "hello planet")
	}
	if left := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); left != "" {
		t.Errorf("composer still holds %q after sending", left)
	}
	if n := Run(b, "count typing indicators", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="typing"]').length`)); n != 0 {
		t.Errorf("%d typing indicators left after the reply", n)
	}
	if disabled := Run(b, "send button state", chromedp.Evaluate[bool](`document.querySelector('[data-testid="composer-send"]').disabled`)); disabled {
		t.Error("send stays disabled after the turn")
	}

	// The address now names the conversation, and the side list has it.
	loc := Run(b, "read the location", chromedp.Location())
	u, err := url.Parse(loc)
	if err != nil || u.Path != "/chat/"+id || u.Query().Get("c") == "" {
		t.Fatalf("location after the turn = %q", loc)
	}
	conv := u.Query().Get("c")
	current := Run(b, "read the side list", chromedp.AttributeValue(chromedp.CSS(`[data-testid="conversation"][data-current="true"]`), "data-conversation-id"))
	if current.Value != conv {
		t.Errorf("current side-list item = %q, want %q", current.Value, conv)
	}
	b.AssertClean("after the turn")
	chatShot(b, "chat-after-turn.png")

	// A message the server refuses: the error shows inline, in the
	// conversation, and the text goes back into the composer.
	long := strings.Repeat("x", chat.MaxMessageBytes+100)
	b.Do("send a message that is too long",
		chromedp.SetValue(Tid("composer-input"), long),
		chromedp.SendKeys(Tid("composer-input"), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="error"][data-code="message_too_large"]`)),
	)
	if got := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); got != long {
		t.Errorf("refused text not restored: composer holds %d characters, want %d", len(got), len(long))
	}
	if n := Run(b, "count unsent messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"][data-unsent="true"]').length`)); n != 1 {
		t.Errorf("%d messages marked unsent, want 1", n)
	}
	refused := Run(b, "read the error line", chromedp.Evaluate[errorLine](readErrorLine))
	if refused.Label != "Not sent: your message was not saved." || refused.Text != "Messages are limited to 8 KiB." || !refused.Retry {
		t.Errorf("error line for a refused message = %+v", refused)
	}
	b.AssertClean("after a refused message")
	chatShot(b, "chat-refused.png")

	// Reload: the server renders the same conversation.
	b.Do("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	type msg struct{ Role, Text string }
	msgs := Run(b, "read the history", chromedp.Evaluate[[]msg](`Array.from(document.querySelectorAll('[data-testid="message"]'),
		m => ({Role: m.dataset.role, Text: m.querySelector('.msg-text').textContent}))`))
	want := []msg{{"user", "hello planet"}, {"agent", "hello planet"}}
	if len(msgs) != len(want) || msgs[0] != want[0] || msgs[1] != want[1] {
		t.Errorf("history after reload = %+v, want %+v", msgs, want)
	}
	if got := Run(b, "read the conversation id", chromedp.AttributeValue(Tid("chat"), "data-conversation-id")); got.Value != conv {
		t.Errorf("data-conversation-id after reload = %q, want %q", got.Value, conv)
	}
	b.AssertClean("after the reload")
	chatShot(b, "chat-after-reload.png")

	// The agent fails to answer: the message is saved, the line says so,
	// and Try again sends it once more, replacing the failed exchange.
	answerer := e.Server.Chat.Local
	e.Server.Chat.Local = failAnswers{agent.ErrBackendUnavailable} // the next frame orders this before the turn
	b.Do("send a message the agent fails on",
		chromedp.SendKeys(Tid("composer-input"), "again\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="error"][data-code="agent_unavailable"]`)),
	)
	failed := Run(b, "read the error line", chromedp.Evaluate[errorLine](readErrorLine))
	if failed.Label != "Saved, but the agent could not answer:" || failed.Text != "The agent could not answer right now. Try again later." || !failed.Retry {
		t.Errorf("error line for a failed answer = %+v", failed)
	}
	if got := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); got != "" {
		t.Errorf("composer holds %q after a stored message failed", got)
	}
	chatShot(b, "chat-failed-answer.png")
	e.Server.Chat.Local = answerer
	b.Do("try again",
		chromedp.Click(chromedp.CSS(`[data-testid="message"][data-code="agent_unavailable"] [data-testid="message-retry"]`)),
		chatWaitJS(`document.querySelectorAll('[data-testid="message"][data-role="agent"][data-message-id]').length === 2`),
	)
	msgs = Run(b, "read the messages", chromedp.Evaluate[[]msg](`Array.from(document.querySelectorAll('[data-testid="message"]'),
		m => ({Role: m.dataset.role, Text: m.querySelector('.msg-text').textContent}))`))
	// Try again sends the stored message again in place of its failed
	// exchange.
	want = append(want, msg{"user", "again"}, msg{"agent", "again"})
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		t.Errorf("messages after a retry = %+v, want %+v", msgs, want)
	}
	if n := Run(b, "count retry buttons", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message-retry"]').length`)); n != 0 {
		t.Errorf("%d retry buttons left after the retry went through", n)
	}
	b.AssertClean("after a retry")
}

// failAnswers fails every turn with err.
type failAnswers struct{ err error }

func (f failAnswers) Answer(context.Context, agent.Turn, func(string) error) (string, error) {
	return "", f.err
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
func chatShot(b *Browser, name string) {
	b.T.Helper()
	p, err := b.Screenshot(b.Ctx, name)
	if err != nil {
		b.T.Errorf("screenshot %s: %v", name, err)
		return
	}
	b.T.Logf("screenshot: %s", p)
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
	path := ChromiumPath(t)
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	b := NewBrowser(t, path, 60*time.Second)

	b.Do("install the WebSocket control", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: wsControl})
		return err
	}))
	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.Do("drop the connection",
		chatEval(`window.__blockWS = true; window.__sockets[window.__sockets.length - 1].close(); true`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="reconnecting"]`)),
	)
	b.Do("send while disconnected",
		chromedp.SendKeys(Tid("composer-input"), "sent while down\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-error"][data-kind="connection"]`)),
	)
	if got := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); got != "sent while down" {
		t.Errorf("composer holds %q after a send while disconnected, want the text kept", got)
	}
	if n := Run(b, "count messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"]').length`)); n != 0 {
		t.Errorf("%d messages shown for a send that could not go out", n)
	}
	chatShot(b, "chat-reconnecting.png")

	b.Do("let the connection come back",
		chatEval(`window.__blockWS = false; true`),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
		chatWaitJS(`document.querySelector('[data-testid="composer-error"]').hidden`),
	)
	if n := Run(b, "count messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"]').length`)); n != 0 {
		t.Errorf("%d messages after reconnecting: the message was resent by itself", n)
	}
	b.Do("send again",
		chromedp.SendKeys(Tid("composer-input"), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	reply := Run(b, "read the reply", chromedp.Text(chromedp.CSS(`[data-testid="message"][data-role="agent"] .msg-text`)))
	if strings.TrimSpace(reply) != "sent while down" {
		t.Errorf("reply after reconnecting = %q", reply)
	}
	b.AssertClean("after reconnecting")
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
