package portal_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/chat"
	"github.com/agentsite/agentsite/agent/registry"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// liveMsg is a message bubble as the page shows it.
type liveMsg struct{ Role, Text string }

const readLiveMessages = `Array.from(document.querySelectorAll('[data-testid="message"]'),
  m => ({Role: m.dataset.role, Text: m.querySelector('.msg-text').textContent.trim()}))`

func wantBubbles(t *testing.T, b *Browser, what string, want ...liveMsg) {
	t.Helper()
	got := Run(b, what, chromedp.Evaluate[[]liveMsg](readLiveMessages))
	if len(got) != len(want) {
		t.Errorf("%s: messages %+v, want %+v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: messages %+v, want %+v", what, got, want)
			return
		}
	}
}

// wantCalmStop checks that a stop the person chose shows as a note: no
// red error bubble, no warning sign.
func wantCalmStop(t *testing.T, b *Browser, what string) {
	t.Helper()
	got := Run(b, what+": read the stop line", chromedp.Evaluate[[]string](`(() => {
  const li = Array.from(document.querySelectorAll('[data-testid="messages"] > [data-role="error"]')).pop();
  const bubble = li.querySelector('.msg-bubble'), label = li.querySelector('.msg-label');
  return [String(li.classList.contains('msg-stopped')), getComputedStyle(bubble).backgroundColor, getComputedStyle(label, '::before').content];
})()`))
	if got[0] != "true" || got[1] != "rgba(0, 0, 0, 0)" || (got[2] != "none" && got[2] != "normal") {
		t.Errorf("%s: the stop line is [msg-stopped %s, background %s, label sign %s]; want a calm note (no red bubble, no ⚠)", what, got[0], got[1], got[2])
	}
}

// waitCanceled waits for slow's backend to see its context end.
func waitCanceled(t *testing.T, slow *SlowAnswerer) {
	t.Helper()
	select {
	case <-slow.Canceled():
	case <-time.After(30 * time.Second):
		t.Fatal("the backend's context did not end after Stop")
	}
}

// TestChatBrowserStopRetryEdit: while a reply streams, Enter says a reply
// is still coming and Stop is offered; Stop cancels the backend's context
// and leaves the partial reply marked stopped; Try again replaces the
// stopped exchange with a whole one; Edit on the last message puts it in
// the composer, and sending replaces that exchange.
func TestChatBrowserStopRetryEdit(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	id := e.SeedEcho("slow-bot", "Slow Bot")
	b := NewBrowser(t, path, 90*time.Second)
	first := strings.TrimSpace(SlowFirst)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	if hidden := Run(b, "stop before a turn", chromedp.Evaluate[bool](`document.querySelector('[data-testid="composer-stop"]').hidden`)); !hidden {
		t.Error("Stop is offered with no reply on its way")
	}
	b.Do("send a message",
		chromedp.SendKeys(Tid("composer-input"), "tell me a story\r"),
		chatWaitJS(`(document.querySelector('[data-testid="message"][data-role="agent"] .msg-text') || {}).textContent === `+jsString(SlowFirst)),
		chromedp.WaitVisible(Tid("composer-stop")),
	)
	// The conversation is in the side list as soon as it started.
	b.Do("wait for the side list",
		chatWaitJS(`document.querySelectorAll('[data-testid="conversation"][data-current="true"]').length === 1`),
	)
	b.Do("press Enter while the reply streams",
		chromedp.SendKeys(Tid("composer-input"), "impatient\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="composer-error"][data-kind="pending"]`)),
	)
	note := Run(b, "read the note", chromedp.Text(Tid("composer-error")))
	if !strings.Contains(note, "still coming") {
		t.Errorf("note while a reply streams = %q", note)
	}
	if got := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); got != "impatient" {
		t.Errorf("composer = %q, want the text kept", got)
	}
	// Escape stops, as Stop does.
	b.Do("press Escape",
		chromedp.SendKeys(Tid("composer-input"), kb.Escape),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="error"][data-code="stopped"]`)),
	)
	waitCanceled(t, slow)
	// Live messages say when they were sent.
	if n := Run(b, "count stamped times", chromedp.Evaluate[int](`[...document.querySelectorAll('[data-testid="messages"] [data-testid="message-time"]')].filter(t => !t.hidden && t.dateTime && t.textContent && t.title).length`)); n != 3 {
		t.Errorf("%d of 3 live messages show their time", n)
	}
	wantBubbles(t, b, "after stop", liveMsg{"user", "tell me a story"}, liveMsg{"agent", first}, liveMsg{"error", chat.ErrStopped.Message})
	if hidden := Run(b, "stop after the turn", chromedp.Evaluate[bool](`document.querySelector('[data-testid="composer-stop"]').hidden`)); !hidden {
		t.Error("Stop still offered after the turn ended")
	}
	wantCalmStop(t, b, "after stop")
	b.AssertClean("after stop")
	chatShot(b, "chat-stopped.png")

	// The stopped turn is stored as such: a reload shows it, with Try again.
	b.Do("reload",
		chromedp.Reload(),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	wantBubbles(t, b, "stopped turn after a reload", liveMsg{"user", "tell me a story"}, liveMsg{"agent", first}, liveMsg{"error", chat.ErrStopped.Message})
	label := Run(b, "read the stopped label", chromedp.Text(chromedp.CSS(`[data-testid="message"][data-role="error"] .msg-label`)))
	if label != "Stopped:" {
		t.Errorf("stored stop's label = %q", label)
	}
	wantCalmStop(t, b, "stopped turn after a reload")

	// Try again replaces the stopped exchange.
	slow.Release()
	b.Do("try again",
		chromedp.Click(Tid("message-retry")),
		chatWaitJS(`document.querySelectorAll('[data-testid="message"][data-role="agent"][data-message-id]').length === 1 && !document.querySelector('[data-testid="message"][data-role="error"]')`),
	)
	wantBubbles(t, b, "after retry", liveMsg{"user", "tell me a story"}, liveMsg{"agent", SlowFirst + "tell me a story"})
	b.AssertClean("after retry")

	// Edit the last message: it goes into the composer; sending replaces it.
	b.Do("edit the last message",
		chromedp.Click(chromedp.CSS(`[data-testid="message"][data-role="user"] [data-testid="message-edit"]`)),
		chromedp.WaitVisible(Tid("composer-editing")),
	)
	if got := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); got != "tell me a story" {
		t.Errorf("composer after Edit = %q", got)
	}
	slow.Release()
	b.Do("send the edit",
		chromedp.SetValue(Tid("composer-input"), "tell me a poem"),
		chromedp.SendKeys(Tid("composer-input"), "\r"),
		chatWaitJS(`(document.querySelector('[data-testid="message"][data-role="agent"][data-message-id] .msg-text') || {}).textContent === `+jsString(SlowFirst+"tell me a poem")),
	)
	wantBubbles(t, b, "after edit", liveMsg{"user", "tell me a poem"}, liveMsg{"agent", SlowFirst + "tell me a poem"})
	loc, _ := url.Parse(Run(b, "read the location", chromedp.Location()))
	ms, err := e.Store.ListMessages(t.Context(), loc.Query().Get("c"), 10)
	if err != nil || len(ms) != 2 || ms[0].Text != "tell me a poem" || ms[1].Text != SlowFirst+"tell me a poem" {
		t.Errorf("stored after edit = %+v, %v", ms, err)
	}
	b.AssertClean("after edit")
}

// TestChatBrowserReloadMidReply: a reload while the reply streams shows the
// text so far, attaches to the rest, and ends with the whole stored reply.
func TestChatBrowserReloadMidReply(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	slow := NewSlowAnswerer()
	e.Server.Chat.Local = slow
	id := e.SeedEcho("slow-bot", "Slow Bot")
	b := NewBrowser(t, path, 90*time.Second)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.Do("send a message",
		chromedp.SendKeys(Tid("composer-input"), "hello there\r"),
		chatWaitJS(`(document.querySelector('[data-testid="message"][data-role="agent"] .msg-text') || {}).textContent === `+jsString(SlowFirst)),
		chatWaitJS(`location.search.startsWith("?c=")`),
	)
	b.Do("reload mid-reply",
		chromedp.Reload(),
		chromedp.WaitVisible(Tid("live-reply")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	wantBubbles(t, b, "after the reload", liveMsg{"user", "hello there"}, liveMsg{"agent", strings.TrimSpace(SlowFirst)})
	if hidden := Run(b, "stop after the reload", chromedp.Evaluate[bool](`document.querySelector('[data-testid="composer-stop"]').hidden`)); hidden {
		t.Error("no Stop for the reply on its way after a reload")
	}
	chatShot(b, "chat-reloaded-mid-reply.png")
	slow.Release()
	b.Do("wait for the rest of the reply",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	wantBubbles(t, b, "after the reply ended", liveMsg{"user", "hello there"}, liveMsg{"agent", SlowFirst + "hello there"})
	if n := e.Server.Live.Len(); n != 0 {
		t.Errorf("%d turns kept in memory after the reply ended", n)
	}
	b.AssertClean("after attaching")
}

// TestChatBrowserStarterPrompts: an empty conversation offers the agent's
// skill examples; clicking one fills the composer (and sends nothing).
func TestChatBrowserStarterPrompts(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	in := SimpleInput("starter-bot", "Starter Bot")
	in.Skills = []agent.Skill{{ID: "greet", Name: "Greet", Examples: []string{"Say hello in French", "Count to three"}}}
	id := e.SeedAgent("", in).Record.ID
	b := NewBrowser(t, path, 60*time.Second)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(Tid("starter-prompts")),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	if n := Run(b, "count starters", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="starter-prompt"]').length`)); n != 2 {
		t.Errorf("%d starter prompts, want 2", n)
	}
	b.Do("click a starter", chromedp.Click(chromedp.CSS(`[data-testid="starter-prompt"][data-prompt="Count to three"]`)))
	if got := Run(b, "read the composer", chromedp.Value(Tid("composer-input"))); got != "Count to three" {
		t.Errorf("composer after a starter = %q", got)
	}
	if n := Run(b, "count messages", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="message"]').length`)); n != 0 {
		t.Errorf("a starter sent %d messages by itself", n)
	}
	b.Do("send it",
		chromedp.SendKeys(Tid("composer-input"), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	b.AssertClean("after a starter prompt")
}

// TestChatBrowserRenameDelete: the owner renames a conversation and
// deletes another; a conversation whose agent was deleted opens read-only.
func TestChatBrowserRenameDelete(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	id := e.SeedEcho("echo-bot", "Echo Bot")
	b := NewBrowser(t, path, 90*time.Second)

	b.Do("open the chat page",
		chromedp.Navigate(e.TS.URL+"/chat/"+id),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
	)
	b.Do("send a message",
		chromedp.SendKeys(Tid("composer-input"), "first chat\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	b.Do("reload to get the actions",
		chromedp.Reload(),
		chromedp.WaitVisible(Tid("conversation-actions")),
	)
	b.Do("rename",
		chromedp.Click(chromedp.CSS(`[data-testid="conversation-actions"] summary`)),
		chromedp.WaitVisible(Tid("rename-title")),
		chromedp.SetValue(Tid("rename-title"), "Trip plans"),
		chromedp.Submit(Tid("rename-title")),
		chromedp.WaitVisible(Tid("flash")),
	)
	if title := Run(b, "read the side list", chromedp.Text(chromedp.CSS(`[data-testid="conversation"][data-current="true"] .conv-title`))); title != "Trip plans" {
		t.Errorf("side-list title after rename = %q", title)
	}
	b.AssertClean("after rename")

	b.Do("delete",
		chatEval(`window.confirm = () => true; true`),
		chromedp.Click(chromedp.CSS(`[data-testid="conversation-actions"] summary`)),
		chromedp.Click(Tid("delete-conversation")),
		chromedp.WaitVisible(Tid("conversations-empty")),
	)
	if loc, _ := url.Parse(Run(b, "read the location", chromedp.Location())); loc.Query().Get("c") != "" {
		t.Errorf("after delete the page is %s, want the new-conversation page", loc)
	}
	b.AssertClean("after delete")

	// A conversation with an agent that was deleted stays readable.
	b.Do("send another message",
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)),
		chromedp.SendKeys(Tid("composer-input"), "kept for later\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="message"][data-role="agent"][data-message-id]`)),
	)
	loc := Run(b, "read the location", chromedp.Location())
	if err := e.Server.Registry.Delete(t.Context(), registry.Operator, id); err != nil {
		t.Fatal(err)
	}
	b.Do("open the deleted agent's conversation",
		chromedp.Navigate(loc),
		chromedp.WaitVisible(Tid("chat-readonly")),
	)
	wantBubbles(t, b, "read-only conversation", liveMsg{"user", "kept for later"}, liveMsg{"agent", "kept for later"})
	if n := Run(b, "count composers", chromedp.Evaluate[int](`document.querySelectorAll('[data-testid="composer"]').length`)); n != 0 {
		t.Errorf("%d composers on a deleted agent's conversation", n)
	}
	chatShot(b, "chat-readonly.png")
	b.AssertClean("read-only conversation")
}
