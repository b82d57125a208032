package chat

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// markdownParser reads a first message's Markdown for its title (the
// parser holds no state between Parse calls).
var markdownParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers(parser.DefaultInlineParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// plainText is Markdown's text without its markup, as a reader sees it:
// "**Hello** `x` [docs](https://…)" is "Hello x docs". Blocks and line
// breaks become spaces; code keeps its text.
func plainText(md string) string {
	if !strings.ContainsAny(md, "*_`#[]!<>~|-+=\\&") {
		return md // nothing Markdown could mean
	}
	src := []byte(md)
	doc := markdownParser.Parse(text.NewReader(src))
	var b strings.Builder
	lines := func(n ast.Node) {
		ls := n.Lines()
		for i := 0; i < ls.Len(); i++ {
			seg := ls.At(i)
			b.Write(seg.Value(src))
			b.WriteByte(' ')
		}
	}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			if n.Type() == ast.TypeBlock {
				b.WriteByte(' ')
			}
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Text:
			b.Write(n.Segment.Value(src))
			if n.SoftLineBreak() || n.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(n.Value)
		case *ast.AutoLink:
			b.Write(n.Label(src))
		case *ast.RawHTML:
			for i := 0; i < n.Segments.Len(); i++ {
				seg := n.Segments.At(i)
				b.Write(seg.Value(src))
			}
		case *ast.CodeBlock, *ast.FencedCodeBlock, *ast.HTMLBlock:
			lines(n)
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// TitleText is a stored title as the side list shows it: text, without
// Markdown's markup (titles stored before titles were made plain, or
// given by the person, keep none either); a title that is all markup
// stays as it is.
func TitleText(title string) string {
	if t := strings.Join(strings.Fields(plainText(title)), " "); t != "" {
		return t
	}
	return title
}
