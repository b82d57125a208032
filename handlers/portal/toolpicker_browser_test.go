package portal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/agent/registry"
	. "github.com/agentsite/agentsite/handlers/handlertest"
)

// TestBrowserToolPicker: in a real chromium, on the register form of an
// llm agent, typing in the tool picker finds an MCP server on the hub
// with its tools, with no page load; Add puts its id on a new line of
// Tools and says Added; saving stores it as the agent's tool. axe-core
// finds nothing wrong with the form, results shown, and no CSP rule
// breaks.
func TestBrowserToolPicker(t *testing.T) {
	path := ChromiumPath(t)
	axeSrc := loadAxe(t)
	e := New(t)
	mcp := e.SeedAgent("", registry.Input{
		Name: "zeta-weather-mcp", DisplayName: "Zeta Weather Server", Description: "Weather tools.",
		Tags:    []string{"mcp", "zeta"},
		Skills:  []agent.Skill{{ID: "get-forecast", Name: "get_forecast"}, {ID: "get-alerts", Name: "get_alerts"}},
		Backend: agent.Backend{Kind: agent.BackendMCP, URL: "https://tools.example.com/mcp", Tool: "get_forecast"},
	}).Record.ID
	e.SeedAgent("", SimpleInput("zeta-echo", "Zeta Echo", "zeta"))
	b := NewBrowser(t, path, 90*time.Second)
	base := e.TS.URL

	b.Do("inject axe", chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: axeSrc})
		return err
	}))
	axeClean := func(stage string) {
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
		b.AssertClean(stage)
	}

	const handle, password = "picker", "correct horse battery"
	b.Do("sign up", chromedp.Navigate(base+"/signup"), chromedp.WaitVisible(Tid("signup-form")),
		chromedp.SendKeys(chromedp.ID("handle"), handle),
		chromedp.SendKeys(chromedp.ID("password"), password),
		chromedp.SendKeys(chromedp.ID("password-confirm"), password),
		chromedp.Click(chromedp.CSS(`[data-testid="signup-form"] button[type="submit"]`)),
		chromedp.WaitVisible(Tid("nav-account")),
	)
	b.Do("fill the register form for an llm agent", chromedp.Navigate(base+"/register"), chromedp.WaitVisible(Tid("agent-form")),
		chromedp.SendKeys(chromedp.ID("name"), "tooled-bot"),
		chromedp.SendKeys(chromedp.ID("display_name"), "Tooled Bot"),
		chromedp.SetValue(chromedp.ID("backend-kind"), "llm"),
		chromedp.WaitVisible(Tid("tool-search")),
		chromedp.SendKeys(chromedp.ID("backend-url"), "https://api.example.com/v1"),
		chromedp.SendKeys(chromedp.ID("backend-model"), "gpt-x"),
		chromedp.Evaluate[chromedp.Void](`window.__noReload = true`),
	)
	result := fmt.Sprintf(`[data-testid="tool-result"][data-agent-id=%q]`, mcp)
	b.Do("search the hub for a tool",
		chromedp.SendKeys(Tid("tool-search"), "zeta"),
		chromedp.WaitVisible(chromedp.CSS(result+` [data-testid="tool-add"]`)),
	)
	if got := Run(b, "read the result's tools", chromedp.Text(chromedp.CSS(result+` [data-testid="tool-result-offers"]`))); !strings.Contains(got, "get_forecast, get_alerts") {
		t.Errorf("the MCP server offers %q, want its tools", got)
	}
	if !Run(b, "check for a page load", chromedp.Evaluate[bool](`window.__noReload === true`)) {
		t.Error("the search reloaded the page: want htmx to swap the results in place")
	}
	axeClean("results shown")
	if shot, err := b.Screenshot(b.Ctx, "tool-picker.png"); err != nil {
		t.Errorf("screenshot: %v", err)
	} else {
		t.Logf("tool picker screenshot: %s", shot)
	}
	// On a phone the results fit the screen.
	b.Do("phone viewport", chromedp.EmulateViewport(390, 844))
	if w := Run(b, "measure", chromedp.Evaluate[[]int](`[document.documentElement.scrollWidth, window.innerWidth]`)); w[0] > w[1] {
		t.Errorf("on a phone the form scrolls sideways: scrollWidth %d > innerWidth %d", w[0], w[1])
	}
	axeClean("results shown on a phone")

	b.Do("add it", chromedp.Click(chromedp.CSS(result+` [data-testid="tool-add"]`)),
		chromedp.PollFunction[chromedp.Void](`(sel) => document.querySelector(sel).textContent.trim() === 'Added'`,
			chromedp.WithPollingArgs(result+` [data-testid="tool-add"]`), chromedp.WithPollingTimeout(5*time.Second)),
	)
	if got := Run(b, "read Tools", chromedp.Value(Tid("backend-tools"))); got != mcp {
		t.Errorf("Tools = %q after Add, want the server's id", got)
	}
	b.Do("add it again", chromedp.Click(chromedp.CSS(result+` [data-testid="tool-add"]`)))
	if got := Run(b, "read Tools", chromedp.Value(Tid("backend-tools"))); got != mcp {
		t.Errorf("Tools = %q after a second Add, want the id once", got)
	}
	if !Run(b, "check for a page load", chromedp.Evaluate[bool](`window.__noReload === true`)) {
		t.Error("Add reloaded the page: want the id added in place")
	}
	axeClean("added")

	b.Do("save", chromedp.Click(Tid("agent-form-submit")), chromedp.WaitVisible(Tid("agent-detail")))
	id := Run(b, "read the agent id", chromedp.AttributeValue(Tid("agent-detail"), "data-agent-id")).Value
	bk, err := e.Store.GetBackend(t.Context(), id)
	if err != nil || len(bk.Tools) != 1 || !reflect.DeepEqual(bk.Tools[0], agent.ToolServer{Agent: mcp}) {
		t.Fatalf("saved tools %v, %v; want the picked server", bk.Tools, err)
	}
	b.AssertClean("saved")
}
