// Package mdtext reads Markdown as plain text: a conversation's title,
// an agent's description on a card, wherever markup would show literally.
package mdtext

import (
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// markdownParser reads Markdown for its text (the parser holds no state
// between Parse calls).
var markdownParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers(parser.DefaultInlineParsers()...),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// Plain is Markdown's text without its markup, as a reader sees it:
// "**Hello** `x` [docs](https://…)" is "Hello x docs". Blocks and line
// breaks become spaces; code keeps its text.
func Plain(md string) string {
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
