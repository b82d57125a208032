package portal_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	"github.com/agentsite/agentsite/agent/runtime"
	"github.com/agentsite/agentsite/agent/runtime/fakellm"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestChatBrowserPolish is AgentChat as its users meet it, in
// Chromium with axe-core: the message box has the focus when a chat
// opens; the haiku agent's reply keeps its three lines and is about the
// whole prompt; a finished reply has Copy and Regenerate; a code block is
// one box that scrolls inside itself, with its Copy button, and so are the
// /mcp page's and the agent page's snippets; at 390 px the header keeps
// the agent's name whole, the side list is a drawer and the message box
// stays at the bottom of the screen, keyboard open too.
func TestChatBrowserPolish(t *testing.T) {
	path := ChromiumPath(t)
	axeSrc := loadAxe(t)
	shots := screenshotsDir(t)
	e := NewChat(t)
	poet := e.SeedAgent("", registry.Input{
		Name: "evening-poet", DisplayName: "Evening Haiku Poet", Description: "Writes a haiku about what you send.",
		Tags: []string{"demo", "poetry"}, Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "haiku"},
	}).Record.ID
	echo := e.SeedEcho("echo-bot", "Echo Bot")
	b := NewBrowser(t, path, 3*time.Minute)
	base := e.TS.URL

	b.Do("inject axe", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: axeSrc})
		return err
	}))
	shot := func(name string) {
		t.Helper()
		png := Run(b, "screenshot "+name, chromedp.FullScreenshot(100))
		if err := os.WriteFile(filepath.Join(shots, "chat-polish-"+name+".png"), png, 0o644); err != nil {
			t.Errorf("save %s: %v", name, err)
		}
	}
	clean := func(stage string) {
		t.Helper()
		b.Do(stage+": axe ready", chromedp.PollFunction[chromedp.Void](`() => document.readyState === 'complete' && !!window.axe`))
		raw := Run(b, stage+": run axe", chromedp.Evaluate[string](runAxeJS+`('')`, chromedp.EvalAwaitPromise))
		var vs []axeViolation
		if err := json.Unmarshal([]byte(raw), &vs); err != nil {
			t.Fatalf("%s: axe result %q: %v", stage, raw, err)
		}
		for _, v := range vs {
			t.Errorf("%s: axe %s (%s): %s\n\t%s", stage, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
		}
		if w := Run(b, stage+": measure", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`)); w[0] > w[1] {
			t.Errorf("%s: scrolls sideways: scrollWidth %d > innerWidth %d", stage, w[0], w[1])
		}
		b.AssertClean(stage)
	}
	viewport := func(w, h int64) {
		b.Do("viewport", chromedp.EmulateViewport(w, h, func(p *emulation.SetDeviceMetricsOverrideParams, tp *emulation.SetTouchEmulationEnabledParams) {
			p.Mobile = w < 600
			tp.Enabled = p.Mobile
		}))
	}
	const lastReply = `[data-testid="messages"] > [data-testid="message"][data-role="agent"]`

	// ---------- Desktop ----------
	b.Do("open the poet's chat", chromedp.Navigate(base+"/chat/"+poet),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)))
	if got := Run(b, "read the focus", chromedp.Evaluate[string](`document.activeElement ? (document.activeElement.dataset.testid || document.activeElement.tagName) : ''`)); got != "composer-input" {
		t.Errorf("the focus is on %q when the chat opens, want the message box", got)
	}
	b.Do("ask for a haiku", chromedp.SendKeys(Tid("composer-input"), "the sea\r"),
		chromedp.WaitVisible(chromedp.CSS(lastReply+`[data-message-id] [data-testid="message-markdown"]`)))
	type replyView struct {
		Lines                 []string
		Breaks                int
		CopyShown, RegenShown bool
		ID                    string
	}
	readReply := `(() => {
  const li = Array.from(document.querySelectorAll('` + lastReply + `')).pop();
  const md = li.querySelector('[data-testid="message-markdown"]');
  const shown = el => !!el && !el.hidden && el.offsetParent !== null;
  return {Lines: md.innerText.split('\n').map(s => s.trim()).filter(Boolean), Breaks: md.querySelectorAll('br').length,
    CopyShown: shown(li.querySelector('[data-testid="message-copy"]')), RegenShown: shown(li.querySelector('[data-testid="message-regenerate"]')),
    ID: li.dataset.messageId || ''};
})()`
	got := Run(b, "read the haiku", chromedp.Evaluate[replyView](readReply))
	if len(got.Lines) != 3 || got.Breaks != 2 || got.Lines[0] != "the sea in the dusk —" {
		t.Errorf("the haiku shows as %q (%d line breaks), want three lines, the first about the whole prompt", got.Lines, got.Breaks)
	}
	if !got.CopyShown || !got.RegenShown {
		t.Errorf("a finished reply: Copy shown %v, Regenerate shown %v; want both", got.CopyShown, got.RegenShown)
	}
	shot("desktop-haiku")
	clean("desktop haiku")
	b.Do("copy the reply", chromedp.Click(chromedp.CSS(lastReply+` [data-testid="message-copy"]`)),
		chatWaitJS(`['Copied', 'Press Ctrl+C'].includes(Array.from(document.querySelectorAll('`+lastReply+` [data-testid="message-copy"]')).pop().textContent)`))
	b.Do("regenerate", chromedp.Click(chromedp.CSS(lastReply+` [data-testid="message-regenerate"]`)),
		chatWaitJS(`(() => { const r = document.querySelectorAll('`+lastReply+`[data-message-id]'); return r.length === 1 && r[0].dataset.messageId !== `+jsString(got.ID)+`; })()`))
	again := Run(b, "read the new haiku", chromedp.Evaluate[replyView](readReply))
	if len(again.Lines) != 3 || !again.CopyShown || !again.RegenShown {
		t.Errorf("after Regenerate: %+v, want one three-line reply with Copy and Regenerate", again)
	}
	b.Do("reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)))
	if stored := Run(b, "read the stored haiku", chromedp.Evaluate[replyView](readReply)); len(stored.Lines) != 3 || !stored.CopyShown || !stored.RegenShown {
		t.Errorf("after a reload: %+v, want the three lines with Copy and Regenerate", stored)
	}
	if got := Run(b, "read the focus", chromedp.Evaluate[string](`(document.activeElement || {}).id || ''`)); got != "chat-text" {
		t.Errorf("the focus is on %q after a reload, want the message box", got)
	}
	poetConv := Run(b, "read the URL", chromedp.Location())

	// One box per code block, scrolling inside itself.
	long := strings.Repeat("wide ", 60)
	b.Do("open the echo's chat", chromedp.Navigate(base+"/chat/"+echo),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)))
	b.Do("send a code block", chromedp.SetValue(Tid("composer-input"), "```\nline one\n"+long+"\nline three\n```\n\nand `inline` code"),
		chromedp.Click(Tid("composer-send")),
		chromedp.WaitVisible(chromedp.CSS(lastReply+`[data-message-id] [data-testid="message-markdown"] pre`)))
	type codeView struct {
		Pres, Copies, CodeRects int
		CodeBackground          string
		Scrolls                 bool
	}
	readCode := `(() => {
  const md = document.querySelector('` + lastReply + ` [data-testid="message-markdown"]');
  const pre = md.querySelector('pre'), code = pre.querySelector('code');
  return {Pres: md.querySelectorAll('pre').length, Copies: md.querySelectorAll('.code-block [data-testid="code-copy"]').length,
    CodeRects: getComputedStyle(code).backgroundColor === 'rgba(0, 0, 0, 0)' ? 0 : code.getClientRects().length,
    CodeBackground: getComputedStyle(code).backgroundColor, Scrolls: pre.scrollWidth > pre.clientWidth};
})()`
	code := Run(b, "read the code block", chromedp.Evaluate[codeView](readCode))
	if code.Pres != 1 || code.Copies != 1 || code.CodeRects != 0 || !code.Scrolls {
		t.Errorf("code block = %+v, want one box (no background of its own per line) that scrolls inside, with Copy", code)
	}
	shot("desktop-code")
	clean("desktop code block")

	// The /mcp page: each snippet one box with its Copy button.
	type snippetView struct {
		Boxes, Copies, Staircase, Overflow, Hidden int
	}
	readSnippets := `(() => {
  const pres = Array.from(document.querySelectorAll('main pre'));
  const main = document.querySelector('main').getBoundingClientRect();
  return {Boxes: pres.length, Copies: Array.from(document.querySelectorAll('main [data-testid="copy"]')).filter(b => b.offsetParent !== null).length,
    Staircase: pres.filter(p => { const c = p.querySelector('code'); return c && getComputedStyle(c).backgroundColor !== 'rgba(0, 0, 0, 0)'; }).length,
    Overflow: pres.filter(p => { const r = p.closest('.panel, section, main').getBoundingClientRect(); return p.getBoundingClientRect().right > r.right + 1 || p.getBoundingClientRect().right > main.right + 1; }).length,
    Hidden: pres.filter(p => p.classList.contains('use-code') && p.scrollWidth > p.clientWidth + 1).length};
})()`
	b.Do("open /mcp", chromedp.Navigate(base+"/mcp?agent="+echo), chromedp.WaitVisible(Tid("mcp-tool-call")))
	if s := Run(b, "read /mcp", chromedp.Evaluate[snippetView](readSnippets)); s.Boxes < 4 || s.Copies != s.Boxes || s.Staircase != 0 || s.Overflow != 0 || s.Hidden != 0 {
		t.Errorf("/mcp snippets = %+v, want each a box with a shown Copy, no per-line boxes, none past its panel or partly out of sight", s)
	}
	shot("desktop-mcp")
	clean("desktop /mcp")

	// The agent page's narrow column: the curl command and the URLs whole.
	b.Do("open the agent page", chromedp.Navigate(base+"/agents/"+echo), chromedp.WaitVisible(Tid("use-curl")))
	if s := Run(b, "read the agent page's snippets", chromedp.Evaluate[snippetView](readSnippets)); s.Staircase != 0 || s.Overflow != 0 || s.Hidden != 0 {
		t.Errorf("agent page snippets = %+v, want none boxed per line, past its column or partly out of sight", s)
	}
	shot("desktop-agent-page")

	// ---------- Phone ----------
	viewport(390, 844)
	for name, p := range map[string]string{"mobile-agent-page": "/agents/" + echo, "mobile-mcp": "/mcp?agent=" + echo} {
		b.Do("open "+p, chromedp.Navigate(base+p), chromedp.WaitReady("body"))
		if s := Run(b, "read the snippets of "+p, chromedp.Evaluate[snippetView](readSnippets)); s.Staircase != 0 || s.Overflow != 0 || s.Hidden != 0 {
			t.Errorf("%s at 390 px: snippets = %+v, want none boxed per line, past its column or partly out of sight", p, s)
		}
		shot(name)
	}
	b.Do("open the poet's conversation", chromedp.Navigate(poetConv),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat"][data-drawer="closed"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)))
	type phoneView struct {
		NameShown, NameLen, HeadHeight, Menu int
		Name                                 string
		ComposerTop, ComposerBottom, Inner   int
		DrawerLeft, DrawerRight              int
		DrawerVisible, Expanded              string
		Focus                                string
	}
	readPhone := `(() => {
  const h1 = document.querySelector('[data-testid="chat-header"] h1'), name = document.querySelector('[data-testid="chat-agent-name"]');
  const text = name.textContent.trim();
  const shown = h1.scrollWidth <= h1.clientWidth + 1 ? text.length : Math.floor(text.length * h1.clientWidth / h1.scrollWidth);
  const c = document.querySelector('[data-testid="composer-input"]').getBoundingClientRect();
  const side = document.querySelector('[data-testid="chat-side"]'), s = side.getBoundingClientRect();
  return {Name: text, NameLen: text.length, NameShown: shown, HeadHeight: Math.round(document.querySelector('[data-testid="chat-header"]').getBoundingClientRect().height),
    Menu: Math.round(document.querySelector('[data-testid="conversation-actions-open"]').getBoundingClientRect().width),
    ComposerTop: Math.round(c.top), ComposerBottom: Math.round(c.bottom), Inner: window.innerHeight,
    DrawerLeft: Math.round(s.left), DrawerRight: Math.round(s.right), DrawerVisible: getComputedStyle(side).visibility,
    Expanded: document.querySelector('[data-testid="conversations-toggle"]').getAttribute('aria-expanded'),
    Focus: (document.activeElement && document.activeElement.dataset.testid) || ''};
})()`
	// The drawer slides (a transition): wait for it to settle.
	settled := func(open bool) chromedp.Action[chromedp.Void] {
		if open {
			return chatWaitJS(`document.querySelector('[data-testid="chat-side"]').getBoundingClientRect().left >= 0`)
		}
		return chatWaitJS(`getComputedStyle(document.querySelector('[data-testid="chat-side"]')).visibility === 'hidden'`)
	}
	b.Do("the drawer is shut", settled(false))
	ph := Run(b, "read the phone layout", chromedp.Evaluate[phoneView](readPhone))
	if ph.NameShown < min(12, ph.NameLen) {
		t.Errorf("the header shows %d of the %d characters of %q, want at least 12", ph.NameShown, ph.NameLen, ph.Name)
	}
	if ph.HeadHeight > 72 || ph.Menu > 48 {
		t.Errorf("header %d px high, actions button %d px wide: want a compact header (≤ 72 px) with its actions in a small menu button", ph.HeadHeight, ph.Menu)
	}
	if ph.ComposerTop < 0 || ph.ComposerBottom > ph.Inner || ph.ComposerBottom < ph.Inner-120 {
		t.Errorf("message box at %d–%d px of a %d px screen: want it visible at the bottom", ph.ComposerTop, ph.ComposerBottom, ph.Inner)
	}
	if ph.DrawerVisible != "hidden" || ph.DrawerRight > 0 || ph.Expanded != "false" {
		t.Errorf("closed drawer: %+v", ph)
	}
	shot("mobile-chat")
	clean("mobile chat")

	b.Do("open the drawer", chromedp.Click(Tid("conversations-toggle")), settled(true))
	ph = Run(b, "read the open drawer", chromedp.Evaluate[phoneView](readPhone))
	if ph.DrawerVisible != "visible" || ph.DrawerLeft < 0 || ph.DrawerRight > 390 || ph.Expanded != "true" {
		t.Errorf("open drawer: left %d right %d, %s, expanded %s", ph.DrawerLeft, ph.DrawerRight, ph.DrawerVisible, ph.Expanded)
	}
	if n := Run(b, "count conversations", chromedp.Evaluate[int](`Array.from(document.querySelectorAll('[data-testid="chat-side"] [data-testid="conversation"]')).filter(c => c.getBoundingClientRect().width > 0).length`)); n != 2 {
		t.Errorf("%d conversations in the drawer, want 2", n)
	}
	if inert := Run(b, "is the chat behind inert", chromedp.Evaluate[bool](`document.querySelector('.chat-main').inert`)); !inert {
		t.Error("with the drawer open, Tab can reach the chat behind it")
	}
	shot("mobile-drawer")
	clean("mobile drawer open")
	b.Do("shut it with Escape", chromedp.KeyEvent("\x1b"), settled(false))
	if ph = Run(b, "read the shut drawer", chromedp.Evaluate[phoneView](readPhone)); ph.Focus != "conversations-toggle" || ph.Expanded != "false" {
		t.Errorf("after Escape: focus on %q, expanded %s; want the focus back on the drawer button", ph.Focus, ph.Expanded)
	}

	// Rename or delete: a menu from the small button, on the screen.
	b.Do("open the actions menu", chromedp.Click(Tid("conversation-actions-open")), chromedp.WaitVisible(Tid("rename-form")))
	if r := Run(b, "measure the menu", chromedp.Evaluate[[]int](`(() => { const r = document.querySelector('.conv-actions-body').getBoundingClientRect(); return [Math.round(r.left), Math.round(r.right), window.innerWidth]; })()`)); r[0] < 0 || r[1] > r[2] {
		t.Errorf("the actions menu spans %d–%d px of a %d px screen", r[0], r[1], r[2])
	}
	shot("mobile-actions")
	clean("mobile actions menu")
	b.Do("close the actions menu", chromedp.Click(Tid("conversation-actions-open")), chatWaitJS(`!document.querySelector('[data-testid="conversation-actions"]').open`))

	// The keyboard open: the visual viewport is half the screen.
	viewport(390, 420)
	b.Do("the chat fits the smaller screen", chatWaitJS(`document.querySelector('[data-testid="composer-input"]').getBoundingClientRect().bottom <= window.innerHeight`))
	ph = Run(b, "read the phone layout, keyboard open", chromedp.Evaluate[phoneView](readPhone))
	if ph.ComposerTop < 0 || ph.ComposerBottom > ph.Inner || ph.ComposerBottom < ph.Inner-120 {
		t.Errorf("keyboard open: message box at %d–%d px of %d px, want it at the bottom", ph.ComposerTop, ph.ComposerBottom, ph.Inner)
	}
	shot("mobile-keyboard")
	clean("mobile keyboard open")
}

// TestChatBrowserPlannerKeepsLines: an agent that calls agents (a
// scripted model) finds the haiku agent ("1 agent found", a real plural)
// and asks it; its answer quotes the haiku, whose three lines stay three
// in the rendered answer too.
func TestChatBrowserPlannerKeepsLines(t *testing.T) {
	path := ChromiumPath(t)
	e := NewChat(t)
	e.Server.Registry.AllowPrivate = true // the fake model is on 127.0.0.1
	e.SeedAgent("", registry.Input{Name: "poet", DisplayName: "Poet", Description: "Writes a haiku.",
		Tags: []string{"poetry"}, Backend: agent.Backend{Kind: agent.BackendBuiltin, Builtin: "haiku"}})
	model := &fakellm.Server{Model: "demo", Script: func(r fakellm.Request) fakellm.Reply {
		results := r.ToolResults()
		switch len(results) {
		case 0:
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("find-1", runtime.ToolFindAgents, map[string]string{"query": "haiku"})}}
		case 1:
			var found struct {
				Agents []runtime.FoundAgent `json:"agents"`
			}
			if json.Unmarshal([]byte(results[0]), &found) != nil || len(found.Agents) == 0 {
				return fakellm.Reply{Text: "no poet found"}
			}
			return fakellm.Reply{Calls: []fakellm.ToolCall{fakellm.Call("ask-1", runtime.ToolAskAgent, map[string]string{"agent_id": found.Agents[0].ID, "text": "the sea"})}}
		}
		var res struct{ Reply string }
		_ = json.Unmarshal([]byte(results[1]), &res)
		return fakellm.Reply{Text: "I asked the poet for a haiku about the sea:\n\n" + res.Reply + "\n\n(a scripted model)"}
	}}
	llm := httptest.NewServer(model)
	t.Cleanup(llm.Close)
	planner := e.SeedAgent("", registry.Input{Name: "planner", DisplayName: "Planner", Description: "Asks others.",
		Backend: agent.Backend{Kind: agent.BackendLLM, URL: llm.URL + "/v1", Model: "demo", Delegate: true}}).Record.ID

	b := NewBrowser(t, path, 60*time.Second)
	b.Do("open the planner's chat", chromedp.Navigate(e.TS.URL+"/chat/"+planner),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="chat-connection"][data-state="open"]`)))
	b.Do("ask", chromedp.SendKeys(Tid("composer-input"), "a poem please\r"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="messages"] > [data-role="agent"][data-message-id] [data-testid="message-markdown"]`)))
	got := Run(b, "read the answer", chromedp.Evaluate[[]string](`(() => {
  const md = document.querySelector('[data-testid="messages"] > [data-role="agent"] [data-testid="message-markdown"]');
  const find = document.querySelector('[data-testid="step"][data-tool="find_agents"] .step-result');
  return [find ? find.textContent : '', String(md.querySelectorAll('br').length)].concat(md.innerText.split('\n').map(s => s.trim()).filter(Boolean));
})()`))
	want := []string{"1 agent found", "2", "I asked the poet for a haiku about the sea:", "the sea in the dusk —", "a quiet answer settles", "like snow on the pond", "(a scripted model)"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the planner's answer reads %q\nwant %q", got, want)
	}
	b.AssertClean("the planner's answer")
	chatShot(b, "chat-planner-haiku.png")
}
