package markdown

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"strings"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// Style and DarkStyle are the chroma styles of the highlighting rules in
// static/app.css, for the light and the dark theme.
const (
	Style     = "github"
	DarkStyle = "github-dark"
)

// nodeRenderer renders code blocks (highlighted when their fence names a
// language chroma knows) inside a div.code-block, where static/chat.js
// puts a copy button, and images as their alt text.
type nodeRenderer struct {
	formatter *chromahtml.Formatter
}

func (n *nodeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, n.code)
	reg.Register(ast.KindCodeBlock, n.code)
	reg.Register(ast.KindImage, n.image)
	reg.Register(ast.KindRawHTML, n.rawInline)
	reg.Register(ast.KindHTMLBlock, n.rawBlock)
}

// rawInline shows inline HTML as the text it is ("use <kbd>"), where
// goldmark would drop it.
func (n *nodeRenderer) rawInline(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		segs := node.(*ast.RawHTML).Segments
		for i := 0; i < segs.Len(); i++ {
			s := segs.At(i)
			_, _ = io.WriteString(w, html.EscapeString(string(s.Value(src))))
		}
	}
	return ast.WalkSkipChildren, nil
}

// rawBlock shows a block of HTML as a paragraph of its text.
func (n *nodeRenderer) rawBlock(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	b := node.(*ast.HTMLBlock)
	_, _ = io.WriteString(w, "<p>")
	lines := b.Lines()
	for i := 0; i < lines.Len(); i++ {
		s := lines.At(i)
		_, _ = io.WriteString(w, html.EscapeString(string(s.Value(src))))
	}
	if b.HasClosure() {
		_, _ = io.WriteString(w, html.EscapeString(string(b.ClosureLine.Value(src))))
	}
	_, _ = io.WriteString(w, "</p>\n")
	return ast.WalkSkipChildren, nil
}

func (n *nodeRenderer) code(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	var body bytes.Buffer
	lines := node.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		body.Write(seg.Value(src))
	}
	var lang string
	if f, ok := node.(*ast.FencedCodeBlock); ok && f.Info != nil {
		lang = string(f.Language(src))
	}
	// The block scrolls sideways on a narrow screen: tabindex lets a
	// keyboard reach and scroll it (axe: scrollable-region-focusable).
	_, _ = io.WriteString(w, `<div class="code-block">`)
	if !n.highlight(w, lang, body.String()) {
		_, _ = io.WriteString(w, `<pre tabindex="0"><code>`+html.EscapeString(body.String())+`</code></pre>`)
	}
	_, _ = io.WriteString(w, `</div>`)
	return ast.WalkSkipChildren, nil
}

// highlight writes code in lang as chroma's classed spans, or reports
// false (an unknown language, or none) for plain text.
func (n *nodeRenderer) highlight(w io.Writer, lang, code string) bool {
	if lang == "" {
		return false
	}
	l := lexers.Get(lang)
	if l == nil {
		return false
	}
	it, err := chroma.Coalesce(l).Tokenise(nil, code)
	if err != nil {
		return false
	}
	var out bytes.Buffer
	if err := n.formatter.Format(&out, styles.Get(Style), it); err != nil {
		return false
	}
	_, _ = io.WriteString(w, `<pre class="chroma" tabindex="0"><code class="language-`+langClass(l.Config().Name)+`">`)
	_, _ = w.Write(out.Bytes())
	_, _ = io.WriteString(w, `</code></pre>`)
	return true
}

// langClass is a lexer's name as a class: lower case, letters and digits
// only ("C++" is "c").
func langClass(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, name)
}

// image shows an image as its alt text: no request leaves the page.
func (n *nodeRenderer) image(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if entering {
		_, _ = io.WriteString(w, html.EscapeString(string(node.(*ast.Image).Text(src)))) //nolint:staticcheck // Text is what alt holds
	}
	return ast.WalkSkipChildren, nil
}

// CSS is the highlighting rules, by chroma's class names: Style's under
// the light theme, DarkStyle's under the dark one (a visitor's choice,
// data-theme on <html>, or else the system's), each palette scoped so that
// none of its rules leaks into the other theme. It is the block between the
// chroma markers in static/app.css (a test keeps them equal; regenerate
// with `go test ./web/markdown -run TestCSS -update`).
func CSS() (string, error) {
	light, err := styleRules(Style)
	if err != nil {
		return "", err
	}
	dark, err := styleRules(DarkStyle)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	scoped := func(prefix string, rules []string) {
		for _, r := range rules {
			b.WriteString(prefix + r)
		}
	}
	scoped(`:root[data-theme="light"] `, light)
	b.WriteString("@media not (prefers-color-scheme: dark) {\n")
	scoped(`  :root:not([data-theme="dark"]) `, light)
	b.WriteString("}\n")
	scoped(`:root[data-theme="dark"] `, dark)
	b.WriteString("@media (prefers-color-scheme: dark) {\n")
	scoped(`  :root:not([data-theme="light"]) `, dark)
	b.WriteString("}\n")
	return b.String(), nil
}

// styleRules is chroma's CSS for a style, one rule per line
// (".chroma .k { ... }\n"), without its comments and without the page-wide
// .bg rule (.chroma sets the code block's own background).
func styleRules(name string) ([]string, error) {
	var buf bytes.Buffer
	if err := chromahtml.New(chromahtml.WithClasses(true)).WriteCSS(&buf, styles.Get(name)); err != nil {
		return nil, fmt.Errorf("markdown: css of chroma style %s: %w", name, err)
	}
	var rules []string
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if _, rule, ok := strings.Cut(line, "*/ "); ok && strings.HasPrefix(rule, ".chroma") {
			rules = append(rules, rule)
		}
	}
	return rules, nil
}
