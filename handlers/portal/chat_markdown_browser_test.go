package portal_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent/runtime"

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

// TestChatBrowserLiveMarkdown: a reply renders as Markdown while it
// streams (its heading is a heading before the reply ends), and the
// rendering at the end changes the bubble by its last line at most.
func TestChatBrowserLiveMarkdown(t *testing.T) {
	path := ChromiumPath(t)
	e := New(t)
	// Words a little further apart than the page's renderings (at most
	// ten a second): each finished line shows rendered.
	UseRuntimeWith(e, runtime.RuntimeOptions{EchoDelay: 150 * time.Millisecond})
	id := e.SeedEcho("echo-bot", "Echo Bot")
	b := NewBrowser(t, path, 90*time.Second)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
		// Watch every state the reply goes through.
		chromedp.Evaluate[chromedp.Void](`window.__live = {heading: false, raw: false, height: 0, line: 0};
new MutationObserver(() => {
  const m = document.querySelector('[data-testid="message"][data-role="agent"]:not([data-message-id])');
  const live = m && m.querySelector('[data-live-markdown]');
  if (!live) return;
  if (live.querySelector('h1')) window.__live.heading = true;
  if (live.textContent.includes('# Heading')) window.__live.raw = true;
  window.__live.height = live.getBoundingClientRect().height + m.querySelector('.msg-text').getBoundingClientRect().height;
  window.__live.line = parseFloat(getComputedStyle(live).lineHeight) || 24;
}).observe(document.querySelector('[data-testid="messages"]'), {subtree: true, childList: true, characterData: true});`),
	)
	text := "# Heading\n\nSome **bold** words\n- one\n- two\n\nthe end"
	b.Do("send Markdown",
		chromedp.SetValue(Tid("composer-input"), text),
		chromedp.Click(Tid("composer-send")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id] [data-testid="message-markdown"] h1`)),
	)
	type seen struct {
		Heading, Raw, Live bool
		Height, Line, Done float64
	}
	got := Run(b, "read what the reply went through", chromedp.Evaluate[seen](`(() => {
  const m = document.querySelector('[data-testid="message"][data-role="agent"] [data-testid="message-markdown"]');
  return {Heading: window.__live.heading, Raw: window.__live.raw, Height: window.__live.height, Line: window.__live.line,
    Live: !!document.querySelector('[data-live-markdown]'), Done: m.getBoundingClientRect().height};
})()`))
	if !got.Heading || got.Raw {
		t.Errorf("while streaming: heading rendered %v, raw '# Heading' shown %v; want it rendered as it came", got.Heading, got.Raw)
	}
	if got.Live {
		t.Error("the live rendering is still on the page after the reply ended")
	}
	if grow := got.Done - got.Height; grow > 1.5*got.Line || grow < -1.5*got.Line {
		t.Errorf("the bubble went from %.0f px streaming to %.0f px done: more than its last line (%.0f px)", got.Height, got.Done, got.Line)
	}
	b.AssertClean("after a live Markdown reply")
}
