package portal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/agentsite/agentsite/handlers"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// The look-and-access suite: every page of the portal, at 1280×900 and
// 390×844, signed out and signed in, in the light and the dark theme, must
// have zero axe-core violations, no horizontal scroll, and report no CSP
// violation, uncaught exception or console error. A full-page screenshot
// of each is kept (AGENTSITE_SCREENSHOTS, default testdata/screenshots at
// the repository root, ignored by git).
//
// axe-core is the npm package pinned in testdata/axe (make test installs
// it); without it, or without chromium, the test skips loudly, and fails
// under CI=true.

// axePath is axe.min.js of testdata/axe, from this package's directory.
var axePath = filepath.Join("..", "..", "testdata", "axe", "node_modules", "axe-core", "axe.min.js")

func loadAxe(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(axePath)
	if err == nil {
		return string(src)
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("axe-core not installed (%v): .ci/run runs npm ci --prefix testdata/axe", err)
	}
	t.Skipf("AXE-CORE NOT INSTALLED (%v): skipping the accessibility suite; run `npm ci --prefix testdata/axe` (make test does) — in CI this is a failure", err)
	return ""
}

// screenshotsDir is where the suite keeps its screenshots.
func screenshotsDir(t *testing.T) string {
	dir := os.Getenv("AGENTSITE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "testdata", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshots directory: %v", err)
	}
	return dir
}

type viewport struct {
	name          string
	width, height int64
}

var viewports = []viewport{{"desktop", 1280, 900}, {"mobile", 390, 844}}

// axeViolation is what the suite reports of one axe-core violation.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// runAxe injects axe-core (once per document) and runs it; rules limits
// the run to those rule ids ("" for every rule).
const runAxeJS = `(async (only) => {
	const opts = {resultTypes: ['violations']};
	if (only) opts.runOnly = {type: 'rule', values: only.split(',')};
	const r = await axe.run(document, opts);
	return JSON.stringify(r.violations.map(v => ({id: v.id, impact: v.impact || '', help: v.help,
		nodes: v.nodes.slice(0, 5).map(n => n.target.join(' ') + ' :: ' + (n.failureSummary || '').replace(/\s+/g, ' ').slice(0, 300))})));
})`

// cspWatch records securitypolicyviolation events from the very start of
// every document (added before any page script runs).
const cspWatch = `window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' blocked ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber));`

func TestBrowserLookEveryPage(t *testing.T) {
	path := ChromiumPath(t)
	axeSrc := loadAxe(t)
	started := time.Now()
	shots := screenshotsDir(t)
	e := NewConfig(t, OpenSQLite(t), func(c *handlers.Config) { c.NodeName = "node-a" })
	UseRuntime(e)
	b := NewBrowser(t, path, 8*time.Minute)
	base := e.TS.URL

	// An agent to show, search and chat with; a second one so that the
	// filtered list and the tag chips have something to choose from.
	echo := e.SeedAgent("", SimpleInput("echo-bot", "Echo Bot", "demo", "echo"))
	id := echo.Record.ID
	e.SeedAgent("", SimpleInput("weather-bot", "Weather Bot with a rather long display name for the card", "weather", "demo"))
	// The same echo on two other nodes (one card for the three), and a
	// remote agent on node-d, so that cards, the agent page and /nodes
	// show node names.
	e.SeedRemoteCopy(echo, "node-b")
	e.SeedRemoteCopy(echo, "node-c")
	calc := e.SeedRemote("calculator-bot", "Calculator Bot", "")
	e.NameNode(calc.HostPeerID, "node-d")
	// A fill running, and node-d announcing more than this node holds of
	// it: the home page's syncing line and /nodes' "holding N of M".
	e.UseSync(FakeSync{Claims: map[string]int{calc.HostPeerID: 40}, AnnouncedTotal: 40, Fills: true})

	// Every document gets the CSP watch and axe-core before its own
	// scripts run (DevTools injects them; the page's CSP does not apply).
	b.Do("watch CSP events, inject axe", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		for _, src := range []string{cspWatch, axeSrc} {
			if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: src}); err != nil {
				return err
			}
		}
		return nil
	}))
	// The system theme and reduced motion (no transitions, so a theme
	// switch is instant for axe's colour checks).
	emulateTheme := func(theme string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: theme}, {Name: "prefers-reduced-motion", Value: "reduce"}},
			})
			return err
		})
	}
	var tNav, tAxe, tShot time.Duration

	// newConversation sends one message (with a fenced code block) with the
	// composer's no-JS path (form.submit() skips chat.js) and returns the
	// conversation page.
	newConversation := func() string {
		b.Do("open the chat", chromedp.Navigate(base+"/chat/"+id), chromedp.WaitVisible(Tid("composer")))
		b.Do("send a message",
			chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="composer-input"]').value = 'A-first-message-without-spaces-long-enough-to-push-the-conversation-list-wider-than-a-phone **and bold**\n\n~~~go\nfunc main() { fmt.Println("highlighted in both themes") }\n~~~'; document.querySelector('[data-testid="composer"]').submit()`),
			chromedp.WaitVisible(`[data-testid="message"]`),
			// The echoed code block is highlighted: axe checks its colours
			// in both themes.
			chromedp.WaitVisible(`pre.chroma`),
		)
		loc := Run(b, "read the location", chromedp.Location())
		u, err := url.Parse(loc)
		if err != nil || u.Query().Get("c") == "" {
			t.Fatalf("after sending, the browser is at %s", loc)
		}
		return u.RequestURI()
	}
	// shareLink makes a read-only link to conversation conv with its
	// menu's form and returns the link's path.
	shareLink := func(conv string) string {
		b.Do("open the conversation to share", chromedp.Navigate(base+conv), chromedp.WaitReady(Tid("share-form")))
		b.Do("share it",
			chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="share-form"]').submit()`),
			chromedp.WaitVisible(Tid("share-url")),
		)
		link := Run(b, "read the share link", chromedp.Evaluate[string](`document.querySelector('[data-testid="share-url"]').textContent.trim()`))
		u, err := url.Parse(link)
		if err != nil || !strings.HasPrefix(u.Path, "/share/") {
			t.Fatalf("share link %q", link)
		}
		return u.Path
	}
	// The conversation list's long, unbroken title must not widen the page
	// (it did at 390 px: 536 px wide).

	type pg struct{ name, path string }
	pagesFor := func(conv string) []pg {
		shared := shareLink(conv)
		return []pg{
			{"home", "/"},
			{"agents-filtered", "/agents?q=bot&tag=demo&sort=name"},
			{"agent", "/agents/" + id},
			{"publisher", "/publishers/" + e.Node.PeerID()},
			{"register", "/register"},
			{"login", "/login"},
			{"signup", "/signup"},
			{"chat-index", "/chat"},
			{"chat-search", "/chat?q=first-message"},
			{"chat-search-empty", "/chat?q=nothing+like+this"},
			{"conversation", conv},
			{"shared", shared},
			{"shared-revoked", "/share/" + strings.Repeat("A", 43)},
			{"nodes", "/nodes"},
			{"account", "/account"},
			{"account-tokens", "/account/tokens"},
			{"mcp", "/mcp"},
			{"error", "/agents/no-such-agent"},
		}
	}

	pageChecks := 0
	check := func(auth string, vp viewport, p pg) {
		t.Helper()
		stage := fmt.Sprintf("%s %s %s (%s)", vp.name, auth, p.name, p.path)
		t0 := time.Now()
		b.Do(stage+": open", emulateTheme("light"), chromedp.Navigate(base+p.path), chromedp.WaitReady("body"),
			chromedp.PollFunction[chromedp.Void](`() => document.readyState === 'complete' && !!window.axe`))
		tNav += time.Since(t0)
		for _, theme := range []string{"light", "dark"} {
			b.Do(stage+": "+theme+" theme", emulateTheme(theme))
			rules := "" // every rule in light; colours only change in dark
			if theme == "dark" {
				rules = "color-contrast,link-in-text-block"
			}
			t0 = time.Now()
			raw := Run(b, stage+": run axe", chromedp.Evaluate[string](runAxeJS+`(`+jsString(rules)+`)`, chromedp.EvalAwaitPromise))
			tAxe += time.Since(t0)
			var vs []axeViolation
			if err := json.Unmarshal([]byte(raw), &vs); err != nil {
				t.Fatalf("%s: axe result %q: %v", stage, raw, err)
			}
			for _, v := range vs {
				t.Errorf("%s, %s: axe %s (%s): %s\n\t%s", stage, theme, v.ID, v.Impact, v.Help, strings.Join(v.Nodes, "\n\t"))
			}
			// Against the emulated width too: a mobile viewport widens its
			// layout (innerWidth) to fit a page that is too wide.
			wide := Run(b, stage+": measure", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`))
			if wide[0] > wide[1] || wide[0] > int(vp.width) {
				t.Errorf("%s, %s: scrolls sideways: scrollWidth %d, innerWidth %d, screen %d", stage, theme, wide[0], wide[1], vp.width)
			}
			// A screenshot of every page in the light theme; the dark
			// ones signed out only (the same pages, half the time).
			if theme == "light" || auth == "signed-out" {
				t0 = time.Now()
				png := Run(b, stage+": screenshot", chromedp.FullScreenshot(100))
				tShot += time.Since(t0)
				name := fmt.Sprintf("%s-%s-%s-%s.png", vp.name, auth, theme, p.name)
				if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
					t.Errorf("save %s: %v", name, err)
				}
			}
		}
		if csp := Run(b, stage+": read CSP events", chromedp.Evaluate[[]string](`window.__csp || []`)); len(csp) > 0 {
			t.Errorf("%s: CSP violations: %q", stage, csp)
		}
		b.AssertClean(stage)
		pageChecks++
		if testing.Verbose() {
			t.Logf("%s: done at %v (loading %v, axe %v, screenshots %v)", stage, time.Since(started).Round(time.Millisecond), tNav.Round(time.Millisecond), tAxe.Round(time.Millisecond), tShot.Round(time.Millisecond))
		}
	}
	setViewport := func(vp viewport) {
		b.Do("viewport "+vp.name, chromedp.EmulateViewport(vp.width, vp.height, func(p *emulation.SetDeviceMetricsOverrideParams, tp *emulation.SetTouchEmulationEnabledParams) {
			p.Mobile = vp.width < 600
			tp.Enabled = p.Mobile
		}))
	}

	// Signed out.
	anonConv := newConversation()
	for _, vp := range viewports {
		setViewport(vp)
		for _, p := range pagesFor(anonConv) {
			check("signed-out", vp, p)
		}
	}

	// Node names and the grouped card, as the pages show them.
	setViewport(viewports[0])
	names := func(path, sel string) []string {
		b.Do("open "+path, chromedp.Navigate(base+path), chromedp.WaitReady("body"))
		return Run(b, "read the names on "+path, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(`+jsString(sel)+`)).map(e => e.textContent.trim())`))
	}
	echoCards := Run(b, "count the echo cards", chromedp.Evaluate[[]string](`(async () => { const r = await fetch('/agents?q=echo'); const d = new DOMParser().parseFromString(await r.text(), 'text/html');
		return Array.from(d.querySelectorAll('[data-testid="agent-card"]')).map(c => c.dataset.agentId + ' ' + (c.querySelector('[data-testid="card-nodes"]') || {dataset: {}}).dataset.nodes + ' ' + c.querySelector('[data-testid="host-name"]').textContent)})()`, chromedp.EvalAwaitPromise))
	if len(echoCards) != 1 || echoCards[0] != id+" 3 node-a" {
		t.Errorf("search for echo: cards %q, want one card, this node's echo on 3 nodes", echoCards)
	}
	if got := strings.Join(names("/agents", `[data-testid="agent-card"] [data-testid="host-name"]`), ","); !strings.Contains(got, "node-a") || !strings.Contains(got, "node-d") || strings.Contains(got, "node ") {
		t.Errorf("card hosts %q, want node names", got)
	}
	hosts := names("/agents/"+id, `[data-testid="agent-host-line"] [data-testid="host-name"], [data-testid="other-host"]`)
	if len(hosts) > 1 {
		slices.Sort(hosts[1:]) // the other hosts, equally good, in any order
	}
	if got := strings.Join(hosts, ","); got != "node-a,node-b,node-c" {
		t.Errorf("agent page: host and other hosts %q, want node-a,node-b,node-c", got)
	}
	if got := strings.Join(names("/chat/"+calc.Record.ID, `[data-testid="chat-agent-host"]`), ","); !strings.Contains(got, "node-d") {
		t.Errorf("chat header of node-d's agent: %q", got)
	}
	if got := strings.Join(names("/nodes", `[data-testid="node-row"] [data-testid="host-name"], [data-testid="node-self-name"]`), ","); !strings.Contains(got, "node-a") || !strings.Contains(got, "node-b") || !strings.Contains(got, "node-c") || !strings.Contains(got, "node-d") {
		t.Errorf("/nodes names %q, want node-a to node-d", got)
	}

	// The agent page's first screen on a phone leads with what a visitor
	// does (chat, connect, then the skills); the signed record (sequence,
	// publisher and host peer ids, endpoints) waits under a closed Details.
	setViewport(viewports[1])
	b.Do("open the agent page on a phone", chromedp.Navigate(base+"/agents/"+id), chromedp.WaitVisible(Tid("agent-detail")))
	first := Run(b, "measure the first screen", chromedp.Evaluate[map[string]string](`(() => {
		const fold = window.innerHeight, out = {};
		for (const t of ['chat-agent', 'use-agent', 'agent-skills', 'agent-details', 'agent-seq', 'agent-publisher', 'agent-host']) {
			const el = document.querySelector('[data-testid="' + t + '"]');
			out[t] = !el ? 'missing' : !el.checkVisibility() ? 'hidden' : el.getBoundingClientRect().top < fold ? 'above' : 'below';
		}
		const order = ['agent-description', 'use-agent', 'agent-skills', 'agent-details'].map(t => document.querySelector('[data-testid="' + t + '"]').getBoundingClientRect().top);
		out.order = String(order.every((v, i) => i === 0 || v > order[i - 1]));
		return out;
	})()`))
	for k, want := range map[string]string{"chat-agent": "above", "use-agent": "above", "agent-seq": "hidden", "agent-publisher": "hidden", "agent-host": "hidden", "order": "true"} {
		if first[k] != want {
			t.Errorf("agent page on a phone: %s is %q, want %q (all: %v)", k, first[k], want, first)
		}
	}

	// The chat on a phone is an app: one bar (☰, the agent, its status)
	// above the messages, as ChatGPT's and Claude's are; the drawer's
	// conversations take their content's height, one under the other.
	secondConv := newConversation()
	b.Do("open a conversation on a phone", chromedp.Navigate(base+secondConv), chromedp.WaitVisible(`[data-testid="message"]`),
		chromedp.WaitVisible(chromedp.CSS(`.chat[data-drawer]`)))
	chrome := Run(b, "measure the chat's chrome", chromedp.Evaluate[[]float64](`(() => {
		const first = document.querySelector('[data-testid="message"]').getBoundingClientRect().top;
		const head = document.querySelector('[data-testid="chat-header"]').getBoundingClientRect();
		return [first, head.height];
	})()`))
	if chrome[0] > 76 || chrome[1] > 60 {
		t.Errorf("phone chat: the first message starts %.0f px down (header %.0f px); want one bar of about 56 px above it", chrome[0], chrome[1])
	}
	b.Do("open the drawer", chromedp.Click(Tid("conversations-toggle")), chromedp.WaitVisible(chromedp.CSS(`.chat[data-drawer="open"] [data-testid="conversation-list"]`)))
	items := Run(b, "measure the drawer", chromedp.Evaluate[[]float64](`Array.from(document.querySelectorAll('[data-testid="conversation-list"] > li')).map(li => li.getBoundingClientRect().height)`))
	if len(items) < 2 {
		t.Errorf("drawer items %v, want the two conversations", items)
	}
	for _, h := range items {
		if h > 80 {
			t.Errorf("drawer items %v px tall: want each at its content's height", items)
			break
		}
	}
	// The site's own links are in the drawer, now that the top bar is not.
	if n := Run(b, "count the drawer's site links", chromedp.Evaluate[int](`document.querySelectorAll('.chat[data-drawer="open"] [data-testid="drawer-nav"] a').length`)); n < 3 {
		t.Errorf("drawer site links: %d, want the site's sections", n)
	}
	b.Do("close the drawer", chromedp.KeyEvent(kb.Escape))

	// Sign up through the form; then signed in.
	setViewport(viewports[0])
	const handle, password = "look-user", "correct horse battery"
	b.Do("sign up", chromedp.Navigate(base+"/signup"), chromedp.WaitVisible(Tid("signup-form")),
		chromedp.SendKeys(chromedp.ID("handle"), handle),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password-confirm"), password),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
		chromedp.WaitVisible(Tid("nav-account")),
	)
	// "Add skill" with JavaScript: a block cloned in place, numbered, no
	// page load, the focus in its first field.
	b.Do("add a skill block", chromedp.Navigate(base+"/register"), chromedp.WaitVisible(Tid("add-skill")),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true; document.querySelector('#skill-0-id').value = 'typed'`),
		chromedp.Click(Tid("add-skill")), chromedp.WaitVisible(`#skill-1-id`))
	added := Run(b, "read the skill blocks", chromedp.Evaluate[[]string](`[String(window.__noReload === true),
		String(document.querySelectorAll('[data-testid="skill-rows"] .skill-row').length),
		document.querySelectorAll('[data-testid="skill-rows"] legend')[1].textContent,
		document.activeElement.id, document.querySelector('#skill-0-id').value,
		document.querySelector('label[for="skill-1-name"]') ? 'label' : 'no label']`))
	if added[0] != "true" || added[1] != "2" || added[2] != "Skill 2" || added[3] != "skill-1-id" || added[4] != "typed" || added[5] != "label" {
		t.Errorf("after Add skill with JS: [no reload, blocks, legend, focus, first id, label] = %q", added)
	}
	b.AssertClean("add skill")
	userConv := newConversation()
	for _, vp := range viewports {
		setViewport(vp)
		for _, p := range pagesFor(userConv) {
			check("signed-in", vp, p)
		}
	}

	// The theme toggle wins over the system theme and is remembered.
	setViewport(viewports[0])
	b.Do("light system theme", emulateTheme("light"))
	b.Do("toggle to dark", chromedp.Navigate(base+"/"), chromedp.WaitVisible(Tid("theme-toggle")), chromedp.Click(Tid("theme-toggle")))
	b.Do("reload", chromedp.Navigate(base+"/agents"), chromedp.WaitReady("body"))
	theme := Run(b, "read the theme", chromedp.Evaluate[[]string](`[document.documentElement.getAttribute('data-theme') || '', getComputedStyle(document.body).backgroundColor, localStorage.getItem('agentsite-theme') || '']`))
	if theme[0] != "dark" || theme[2] != "dark" || theme[1] != "rgb(15, 19, 32)" {
		t.Errorf("after the toggle and a reload: data-theme %q, background %s, stored %q; want dark", theme[0], theme[1], theme[2])
	}
	b.Do("toggle back", chromedp.Click(Tid("theme-toggle")))
	if got := Run(b, "read the theme", chromedp.Evaluate[string](`localStorage.getItem('agentsite-theme')`)); got != "light" {
		t.Errorf("after toggling back the stored theme is %q", got)
	}
	b.AssertClean("theme toggle")

	t.Logf("%d page views, each in two themes, in %v (loading %v, axe %v, screenshots %v); screenshots in %s",
		pageChecks, time.Since(started).Round(time.Second), tNav.Round(time.Millisecond), tAxe.Round(time.Millisecond), tShot.Round(time.Millisecond), shots)
}

// jsString quotes s for JavaScript.
func jsString(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
