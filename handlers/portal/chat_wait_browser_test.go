package portal_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// waitingAnswerer waits in a pretend model queue, two ahead, until go is
// closed, then answers.
type waitingAnswerer struct{ open chan struct{} }

func (w waitingAnswerer) Answer(ctx context.Context, t agent.Turn, emit func(string) error) (string, error) {
	if t.OnWait != nil {
		t.OnWait(2)
	}
	select {
	case <-w.open:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if t.OnWait != nil {
		t.OnWait(-1)
	}
	return "here at last", emit("here at last")
}

// TestChatBrowserModelQueue: while a turn waits for its model the reply
// shows "waiting for the model: 2 ahead" beside the typing dots, and the
// line goes once the model takes it.
func TestChatBrowserModelQueue(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	w := waitingAnswerer{open: make(chan struct{})}
	e.Server.Chat.Local = w

	b := NewBrowser(t, path, 60*time.Second)
	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.Do("send a message and see the queue",
		chromedp.SendKeys(Tid("composer-input"), "hello\r"),
		chromedp.WaitVisible(Tid("model-wait")),
	)
	if got := Run(b, "read the queue line", chromedp.Evaluate[string](`document.querySelector('[data-testid="model-wait"]:not([hidden])').textContent`)); got != "waiting for the model: 2 ahead" {
		t.Fatalf("queue line %q", got)
	}
	close(w.open)
	b.Do("wait for the reply",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	if n := Run(b, "count queue lines shown", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="model-wait"]:not([hidden])').length`)); n != 0 {
		t.Fatalf("%d queue lines still shown after the reply", n)
	}
}
