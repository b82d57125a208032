package markdown_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/agentsite/agentsite/web/markdown"
)

var update = flag.Bool("update", false, "rewrite the chroma block of static/app.css")

func doc(t *testing.T, text string) *goquery.Document {
	t.Helper()
	d, err := goquery.NewDocumentFromReader(strings.NewReader(string(markdown.Render(text))))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRenderBasics(t *testing.T) {
	d := doc(t, "**bold** and *em*\n\n- one\n- two\n\n1. first\n")
	if got := d.Find("strong").Text(); got != "bold" {
		t.Errorf("strong = %q", got)
	}
	if got := d.Find("em").Text(); got != "em" {
		t.Errorf("em = %q", got)
	}
	if n := d.Find("ul > li").Length(); n != 2 {
		t.Errorf("ul items = %d, want 2", n)
	}
	if n := d.Find("ol > li").Length(); n != 1 {
		t.Errorf("ol items = %d, want 1", n)
	}
}

func TestRenderCodeFence(t *testing.T) {
	d := doc(t, "```go\nfunc main() { x := \"s\" }\n```\n\n```nolang\na < b\n```\n")
	blocks := d.Find("div.code-block")
	if blocks.Length() != 2 {
		t.Fatalf("code blocks = %d, want 2", blocks.Length())
	}
	hl := blocks.Eq(0)
	if hl.Find("pre.chroma code.language-go").Length() != 1 {
		t.Errorf("go fence not highlighted: %s", markdown.Render("```go\nx\n```"))
	}
	if hl.Find("span.kd").Text() != "func" || hl.Find("span.s").Length() == 0 {
		t.Errorf("no token classes in %q", hl.Text())
	}
	if got := blocks.Eq(1).Find("pre code").Text(); got != "a < b\n" {
		t.Errorf("plain block = %q", got)
	}
	if strings.Contains(string(markdown.Render("```go\nx := 1\n```")), "style=") {
		t.Error("inline style in highlighted code (the CSP forbids it)")
	}
}

// A reply is untrusted: whatever it holds, the HTML runs nothing, loads
// nothing and links only to http(s) and mailto.
func TestRenderInert(t *testing.T) {
	in := "<script>alert(1)</script>\n\n[x](javascript:alert(1)) [v](vbscript:x) [d](data:text/html,x) [r](/relative)\n\n" +
		"<img src=x onerror=alert(1)> ![pic](https://example.com/p.png) <a href=\"javascript:alert(2)\">y</a>\n\n" +
		"[ok](https://example.com/a) [mail](mailto:a@example.com)"
	out := string(markdown.Render(in))
	d := doc(t, in)
	if d.Find("script, img, iframe, style, object").Length() != 0 {
		t.Errorf("active element in %s", out)
	}
	if d.Find("[href^=javascript], [href^=JavaScript], [onerror], [style]").Length() != 0 {
		t.Errorf("script href, handler or style in %s", out)
	}
	var hrefs []string
	d.Find("a").Each(func(_ int, a *goquery.Selection) {
		h, _ := a.Attr("href")
		hrefs = append(hrefs, h)
		if strings.HasPrefix(h, "https:") {
			if rel, _ := a.Attr("rel"); rel != "nofollow noopener" {
				t.Errorf("rel of %s = %q", h, rel)
			}
			if tg, _ := a.Attr("target"); tg != "_blank" {
				t.Errorf("target of %s = %q", h, tg)
			}
		}
	})
	if strings.Join(hrefs, " ") != "https://example.com/a mailto:a@example.com" {
		t.Errorf("links = %q, want only the https and mailto ones", hrefs)
	}
	if !strings.Contains(d.Text(), "<script>alert(1)</script>") {
		t.Errorf("raw HTML not shown as text: %s", out)
	}
	if !strings.Contains(d.Text(), "pic") {
		t.Errorf("image alt text missing: %s", out)
	}
}

func TestRenderBounded(t *testing.T) {
	big := strings.Repeat("**b** ", markdown.MaxInput/6+1)
	d := doc(t, big)
	if d.Find("strong").Length() != 0 || d.Find("pre.md-plain").Length() != 1 {
		t.Fatal("an oversized reply was rendered as Markdown")
	}
	if d.Find("pre").Text() != big {
		t.Error("an oversized reply lost text")
	}
}

const (
	cssStart = "/* chroma:start (generated: go test ./web/markdown -run TestCSS -update) */\n"
	cssEnd   = "/* chroma:end */\n"
)

// TestCSS keeps the highlighting rules in static/app.css equal to
// chroma's for markdown.Style.
func TestCSS(t *testing.T) {
	want, err := markdown.CSS()
	if err != nil {
		t.Fatal(err)
	}
	const path = "../../static/app.css"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, cssStart), strings.Index(s, cssEnd)
	if *update {
		if i < 0 || j < i {
			s += "\n" + cssStart + want + cssEnd
		} else {
			s = s[:i+len(cssStart)] + want + s[j:]
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if i < 0 || j < i || s[i+len(cssStart):j] != want {
		t.Fatal("static/app.css lacks chroma's current rules: run go test ./web/markdown -run TestCSS -update")
	}
}

// TestCodeBlocksFocusable: code blocks (highlighted or not) can take the
// keyboard focus, so a keyboard can scroll one that overflows: the
// attribute survives the sanitizer.
func TestCodeBlocksFocusable(t *testing.T) {
	r := markdown.New()
	for _, src := range []string{"```go\nfunc main() {}\n```", "```\nplain\n```", "    indented"} {
		if got := string(r.Render(src)); !strings.Contains(got, `<pre tabindex="0"`) && !strings.Contains(got, `<pre class="chroma" tabindex="0"`) {
			t.Errorf("%q renders without a focusable pre: %s", src, got)
		}
	}
}

// A reply's single newlines are line breaks: a haiku's three lines stay
// three lines (Markdown alone would join them into one paragraph line).
func TestRenderKeepsLineBreaks(t *testing.T) {
	haiku := "the sea in the dusk —\na quiet answer settles\nlike snow on the pond"
	d := doc(t, haiku)
	if n := d.Find("p").Length(); n != 1 {
		t.Fatalf("paragraphs = %d, want 1: %s", n, markdown.Render(haiku))
	}
	if n := d.Find("p > br").Length(); n != 2 {
		t.Errorf("line breaks = %d, want 2: %s", n, markdown.Render(haiku))
	}
	// A blank line is still a new paragraph, and code keeps its own lines
	// without breaks added.
	d = doc(t, "one\ntwo\n\nthree\n\n```\na\nb\n```\n")
	if n := d.Find("p").Length(); n != 2 {
		t.Errorf("paragraphs = %d, want 2", n)
	}
	if n := d.Find("pre br").Length(); n != 0 {
		t.Errorf("breaks inside code = %d, want 0", n)
	}
}

// TestRenderPartial: a streaming reply shows its finished lines as they
// will end up, holds back the unfinished one as text, and shows an open
// code block as a block while it grows; what it renders is as inert as
// a finished reply.
func TestRenderPartial(t *testing.T) {
	cases := []struct {
		text, wantHTML, wantTail string
	}{
		{"Hel", "", "Hel"},
		{"# Title\nSome **bo", "<h1>Title</h1>", "Some **bo"},
		{"- one\n- two\n", "<li>two</li>", ""},
		{"Intro\n```go\nfunc main() {\n\tfmt.Pri", `class="code-block`, ""},
		{"~~~~\ncode\n~~~\nstill code\n", "still code", ""},
		{"```\nx\n```\nafter *it", "<code", "after *it"},
		{"<script>alert(1)</script>\n[x](javascript:alert(1))\n", "&lt;script&gt;", ""},
	}
	for _, c := range cases {
		html, tail := markdown.RenderPartial(c.text)
		if !strings.Contains(string(html), c.wantHTML) || tail != c.wantTail {
			t.Errorf("markdown.RenderPartial(%q) = %q, tail %q; want html with %q, tail %q", c.text, html, tail, c.wantHTML, c.wantTail)
		}
		if strings.Contains(string(html), "<script") || strings.Contains(string(html), "javascript:") {
			t.Errorf("markdown.RenderPartial(%q) = %q is not inert", c.text, html)
		}
	}
	// Once a fence closes, the rest is Markdown again.
	if html, _ := markdown.RenderPartial("```\nx\n```\n**b**\n"); !strings.Contains(string(html), "<strong>b</strong>") {
		t.Errorf("after a closed fence: %q", html)
	}
	// The finished lines render as they will when the reply is done.
	full := "# T\nline one\nline two\n"
	if html, _ := markdown.RenderPartial(full + "line thr"); html != markdown.Render(full) {
		t.Errorf("partial %q differs from the finished lines' rendering %q", html, markdown.Render(full))
	}
}
