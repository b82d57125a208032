package portal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatBrowserMarkdown: a streamed reply ends rendered (the echo of
// Markdown shows bold as <strong> and its code block with a copy button),
// a script and a javascript: link in it stay inert, and the CSP sees no
// violation.
func TestChatBrowserMarkdown(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	b := NewBrowser(t, path, 60*time.Second)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	text := "**bold** <script>window.__pwned=1</script> [x](javascript:window.__pwned=2)\n\n```go\nfunc main() {}\n```"
	b.Do("send Markdown",
		chromedp.SetValue(Tid("composer-input"), text),
		chromedp.Click(Tid("composer-send")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id] [data-testid="message-markdown"] strong`)),
	)
	type rendered struct {
		Strong, Copy, Script, Links, Spans int
		Pwned                              bool
		Text                               string
	}
	got := Run(b, "read the reply", chromedp.Evaluate[rendered](`(() => {
  const m = document.querySelector('[data-testid="message"][data-role="agent"] [data-testid="message-markdown"]');
  return {Strong: m.querySelectorAll('strong').length, Copy: m.querySelectorAll('.code-block [data-testid="code-copy"]').length,
    Script: m.querySelectorAll('script').length, Links: m.querySelectorAll('a').length,
    Spans: m.querySelectorAll('pre.chroma span.kd').length, Pwned: !!window.__pwned, Text: m.textContent};
})()`))
	if got.Strong != 1 || got.Copy != 1 || got.Spans != 1 {
		t.Errorf("rendered reply = %+v, want one strong, one highlighted code block with a copy button", got)
	}
	if got.Script != 0 || got.Links != 0 || got.Pwned {
		t.Errorf("the reply's script or link is live: %+v", got)
	}
	if !strings.Contains(got.Text, "<script>") {
		t.Errorf("raw HTML not shown as text: %q", got.Text)
	}
	b.AssertClean("after a Markdown reply")

	// A reload shows the stored reply rendered the same way, copy button too.
	b.Do("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message-markdown"] .code-block [data-testid="code-copy"]`)),
	)
	if n := Run(b, "count strong", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message-markdown"] strong').length`)); n != 1 {
		t.Errorf("%d strong after reload, want 1", n)
	}
	b.AssertClean("after reload")
	chatShot(b, "chat-markdown.png")
}
