// Package markdown renders an agent's reply, written in Markdown, to HTML
// that is safe to put in a page: agents are untrusted, so the output may
// carry no script, no event handler, no style attribute (the CSP forbids
// inline styles), no image (a remote image would leak the reader to its
// host) and no link other than http(s) and mailto.
//
// Two layers do it: goldmark renders with raw HTML off (an agent's
// <script> becomes text), then bluemonday keeps only an allowlist of
// elements and attributes, whatever goldmark or chroma emitted. Code
// fences with a known language are highlighted by chroma with CSS classes
// (the rules are in static/app.css, see CSS), never inline styles.
package markdown

import (
	"bytes"
	"html"
	"html/template"
	"regexp"
	"strings"
	"sync"

	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	goldhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
)

// MaxInput bounds the text rendered as Markdown (bytes). A longer reply is
// shown as escaped plain text: rendering cost stays bounded whatever an
// agent sends, and nothing of the reply is lost.
const MaxInput = 64 << 10

// Renderer turns Markdown into sanitized HTML. It is safe for concurrent
// use; build one with New and share it.
type Renderer struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

// New builds a Renderer: GFM tables, strikethrough and autolinks, chroma
// highlighting for fenced code, images shown as their alt text, and every
// single newline kept as a line break (hard wraps): agents write lines
// (a haiku, an address, a list without markers) and mean them, where
// Markdown would join them into one line.
func New() *Renderer {
	f := chromahtml.New(chromahtml.WithClasses(true), chromahtml.PreventSurroundingPre(true))
	md := goldmark.New(
		goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify),
		goldmark.WithRendererOptions(
			goldhtml.WithHardWraps(),
			renderer.WithNodeRenderers(util.Prioritized(&nodeRenderer{formatter: f}, 100)),
		),
	)
	return &Renderer{md: md, policy: policy()}
}

// classes are the class attributes our own renderer and chroma write (a
// reply cannot write any: raw HTML is off).
var classes = regexp.MustCompile(`^[a-zA-Z0-9_ -]{1,64}$`)

// policy is stricter than bluemonday's UGCPolicy: no images, no inline
// styles, links only to http(s) and mailto, opened in a new tab without
// the opener or search-engine credit.
func policy() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "strong", "em", "b", "i", "del", "s",
		"blockquote", "ul", "ol", "li", "pre", "code", "span", "div",
		"h1", "h2", "h3", "h4", "h5", "h6",
		"table", "thead", "tbody", "tr", "th", "td")
	p.AllowAttrs("start").Matching(bluemonday.Integer).OnElements("ol")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|center|right)$`)).OnElements("th", "td")
	p.AllowAttrs("class").Matching(classes).OnElements("div", "pre", "code", "span")
	// Code blocks are keyboard-focusable so a keyboard can scroll them.
	p.AllowAttrs("tabindex").Matching(regexp.MustCompile(`^0$`)).OnElements("pre")
	p.AllowAttrs("href").OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(false)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}

// Render is text as template-safe HTML.
func (r *Renderer) Render(text string) template.HTML {
	if len(text) > MaxInput {
		return template.HTML(`<pre class="md-plain">` + html.EscapeString(text) + `</pre>`) // #nosec G203 -- escaped
	}
	var b bytes.Buffer
	if err := r.md.Convert([]byte(text), &b); err != nil {
		return template.HTML(`<p>` + html.EscapeString(text) + `</p>`) // #nosec G203 -- escaped
	}
	// Trimmed: the text of a one-line reply is that line, as before.
	return template.HTML(bytes.TrimSpace(r.policy.SanitizeBytes(b.Bytes()))) // #nosec G203 -- sanitized
}

// RenderPartial renders a reply still streaming, so that it shows as it
// will when done, without flicker: its complete lines as Markdown, and
// tail, the unfinished last line, for the page to show after them as
// plain text (half a "**bold" or "[link" would render wrong now and
// differently a moment later). Inside an open code fence every line is
// code, the unfinished one too: the fence is closed for this rendering,
// so the block shows as a block while it grows.
func (r *Renderer) RenderPartial(text string) (html template.HTML, tail string) {
	cut := strings.LastIndexByte(text, '\n') + 1
	done := text[:cut]
	if fence := openFence(done); fence != "" {
		return r.Render(text + "\n" + fence), ""
	}
	if done == "" {
		return "", text
	}
	return r.Render(done), text[cut:]
}

// openFence is the fence that closes the code block text leaves open
// (CommonMark: a line of three or more backticks or tildes, indented
// less than four spaces, closed by at least as many of the same), or "".
func openFence(text string) string {
	open := ""
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimLeft(line, " ")
		if len(line)-len(l) > 3 || len(l) < 3 || (l[0] != '`' && l[0] != '~') {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, l[:1]))
		if n < 3 {
			continue
		}
		switch {
		case open == "":
			if l[0] == '`' && strings.Contains(l[n:], "`") {
				continue // an info string with a backtick: not a fence
			}
			open = l[:n]
		case l[0] == open[0] && n >= len(open) && strings.TrimSpace(l[n:]) == "":
			open = ""
		}
	}
	return open
}

// defaultRenderer is built on first use: a Renderer holds no state that
// changes, so one serves every caller.
var defaultRenderer = sync.OnceValue(New)

// Render is text as template-safe HTML, by a shared Renderer.
func Render(text string) template.HTML { return defaultRenderer().Render(text) }

// RenderPartial is Renderer.RenderPartial by a shared Renderer.
func RenderPartial(text string) (template.HTML, string) {
	return defaultRenderer().RenderPartial(text)
}
