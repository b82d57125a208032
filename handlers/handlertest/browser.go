package handlertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/audits"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Browser tests drive Debian's chromium (apt-get install chromium) with
// chromedp. They are skipped in -short mode, and skipped loudly when no
// chromium is installed, except under CI, where that is a failure.
//
// Set AGENTSITE_SCREENSHOT_DIR to keep the screenshots after the test (by
// default they go to the test's temporary directory, removed at its end).

// ChromiumPath finds chromium, or skips (fails under CI).
func ChromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test: skipped in -short mode")
	}
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("CHROMIUM NOT FOUND: skipping the browser test; install it with apt-get install chromium — in CI this is a failure")
	return ""
}

// Browser is one headless chromium tab. Everything the page reports that
// means it is broken is collected while the test runs: uncaught exceptions,
// Content-Security-Policy violations (from the browser log and from the
// Audits domain) and console.error calls. AssertClean fails the test on any
// of them; other browser log entries are only logged.
type Browser struct {
	T   *testing.T
	Ctx context.Context // the tab, bounded by the test's overall deadline
	tab context.Context // the tab without that deadline (failure screenshots)

	mu       sync.Mutex
	problems []string
	notes    []string
}

// NewBrowser starts chromium (path from ChromiumPath) with one tab. The
// whole test must finish within timeout. On failure the cleanup saves a
// screenshot of the current page; then the tab and the browser are closed.
func NewBrowser(t *testing.T, path string, timeout time.Duration) *Browser {
	t.Helper()
	b := &Browser{T: t}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(filepath.Join(t.TempDir(), "chromium-profile")),
		chromedp.WindowSize(1280, 900),
	}
	// The allocator's deadline is a backstop: it kills the browser if
	// anything hangs past the test's own deadline.
	guard, cancelGuard := context.WithTimeout(context.Background(), timeout+30*time.Second)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(guard, opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithListener(b.listen))
	ctx, cancelTimeout := context.WithTimeout(tabCtx, timeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc() // waits for the browser process to exit
		cancelGuard()
	})
	b.Ctx, b.tab = ctx, tabCtx

	// The first Do starts the browser; its context (no deadline) owns it.
	start := time.Now()
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, audits.Enable, cdp.Empty{})
		return err
	})); err != nil {
		t.Fatalf("enable the Audits domain: %v", err)
	}
	t.Logf("chromium started in %v", time.Since(start).Round(time.Millisecond))

	// Registered after the cancels, so it runs before them.
	t.Cleanup(func() {
		b.mu.Lock()
		notes := b.notes
		b.mu.Unlock()
		for _, n := range notes {
			t.Logf("browser log: %s", n)
		}
		if t.Failed() {
			b.failureScreenshot()
		}
	})
	return b
}

// listen runs on the tab's event loop: it must be quick and run no command.
func (b *Browser) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		b.problem("uncaught exception: %s", exceptionText(ev.ExceptionDetails))
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, remoteText(a))
			}
			b.problem("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *log.EventEntryAdded:
		e := ev.Entry
		if e == nil {
			return
		}
		text := fmt.Sprintf("[%s %s] %s (%s:%d)", e.Source, e.Level, e.Text, e.URL, e.LineNumber)
		if isCSPText(e.Text) || (e.Source == log.EntrySourceSecurity && e.Level == log.EntryLevelError) {
			b.problem("CSP violation: %s", text)
			return
		}
		b.note("%s", text)
	case *audits.EventIssueAdded:
		if ev.Issue == nil || ev.Issue.Code != audits.InspectorIssueCodeContentSecurityPolicyIssue {
			return
		}
		var d *audits.ContentSecurityPolicyIssueDetails
		if ev.Issue.Details != nil {
			d = ev.Issue.Details.ContentSecurityPolicyIssueDetails
		}
		if d == nil {
			b.problem("CSP violation (audits issue without details)")
			return
		}
		where := ""
		if d.SourceCodeLocation != nil {
			where = fmt.Sprintf(" at %s:%d", d.SourceCodeLocation.URL, d.SourceCodeLocation.LineNumber+1)
		}
		b.problem("CSP violation (audits): %s blocked by %q%s, blocked URL %q",
			d.ContentSecurityPolicyViolationType, d.ViolatedDirective, where, d.BlockedURL)
	}
}

func isCSPText(s string) bool {
	return strings.Contains(s, "Content Security Policy") || strings.Contains(s, "Content-Security-Policy")
}

func (b *Browser) problem(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.problems = append(b.problems, fmt.Sprintf(format, args...))
}

func (b *Browser) note(format string, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notes = append(b.notes, fmt.Sprintf(format, args...))
}

// takeProblems returns and clears what the page reported so far.
func (b *Browser) TakeProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.problems
	b.problems = nil
	return p
}

// AssertClean fails the test (without stopping it) for each exception, CSP
// violation or console error the page reported since the last call.
func (b *Browser) AssertClean(stage string) {
	b.T.Helper()
	for _, p := range b.TakeProblems() {
		b.T.Errorf("%s: %s", stage, p)
	}
}

// do runs steps in the tab and stops the test if one fails.
func (b *Browser) Do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.T.Helper()
	if err := chromedp.Do(b.Ctx, steps...); err != nil {
		b.T.Fatalf("%s: %v", what, err)
	}
}

// run runs one action that returns a value and stops the test if it fails.
func Run[T any](b *Browser, what string, a chromedp.Action[T]) T {
	b.T.Helper()
	v, err := chromedp.Run(b.Ctx, a)
	if err != nil {
		b.T.Fatalf("%s: %v", what, err)
	}
	return v
}

// screenshotDir is where screenshots go: AGENTSITE_SCREENSHOT_DIR if set
// (kept after the test), else the test's temporary directory.
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("AGENTSITE_SCREENSHOT_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err == nil {
			return dir
		}
	}
	return t.TempDir()
}

// screenshot saves a full-page PNG of the current page as name and returns
// its path.
func (b *Browser) Screenshot(ctx context.Context, name string) (string, error) {
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		return "", err
	}
	path := filepath.Join(screenshotDir(b.T), name)
	return path, os.WriteFile(path, png, 0o644)
}

// failureScreenshot saves the page the test failed on. It uses the tab
// without the test's deadline, which may be what just expired.
func (b *Browser) failureScreenshot() {
	ctx, cancel := context.WithTimeout(b.tab, 10*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	path, err := b.Screenshot(ctx, "failure-"+strings.ReplaceAll(b.T.Name(), "/", "_")+".png")
	if err != nil {
		b.T.Logf("failure screenshot of %s: %v", loc, err)
		return
	}
	b.T.Logf("failure screenshot of %s: %s", loc, path)
}

// tid selects by data-testid.
func Tid(id string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf("[data-testid=%q]", id)) }

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return "(no details)"
	}
	s := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		s += " " + d.Exception.Description
	}
	return fmt.Sprintf("%s (%s:%d:%d)", s, d.URL, d.LineNumber+1, d.ColumnNumber+1)
}

func remoteText(o *runtime.RemoteObject) string {
	if o == nil {
		return ""
	}
	if o.Description != "" {
		return o.Description
	}
	if len(o.Value) > 0 {
		return string(o.Value)
	}
	return string(o.Type)
}
