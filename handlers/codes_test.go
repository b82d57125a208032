package handlers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// agentCodes reads the values of agent's Code constants from its source,
// by value: the code spelled out.
func agentCodes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "agent", "errors.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]string{}
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, s := range gd.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					code, _ := strconv.Unquote(lit.Value)
					codes[code] = "agent." + vs.Names[i].Name
				}
			}
		}
	}
	if len(codes) < 10 {
		t.Fatalf("found %d codes in agent/errors.go; the parse missed them", len(codes))
	}
	return codes
}

// codeLiterals finds the string literals of f that stand where an error
// code goes: the code argument of Errorf, a Code field, a constant named
// Code…/code…, and a string compared with a .Code.
func codeLiterals(f *ast.File, visit func(lit *ast.BasicLit)) {
	str := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			visit(lit)
		}
	}
	isCode := func(e ast.Expr) bool {
		sel, ok := e.(*ast.SelectorExpr)
		return ok && sel.Sel.Name == "Code"
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			name := ""
			switch fn := n.Fun.(type) {
			case *ast.Ident:
				name = fn.Name
			case *ast.SelectorExpr:
				name = fn.Sel.Name
			}
			if name == "Errorf" && len(n.Args) == 3 {
				str(n.Args[1])
			}
			if (name == "Code" || name == "errorFrame") && len(n.Args) > 0 {
				str(n.Args[0])
			}
		case *ast.KeyValueExpr:
			if id, ok := n.Key.(*ast.Ident); ok && id.Name == "Code" {
				str(n.Value)
			}
			if lit, ok := n.Key.(*ast.BasicLit); ok && lit.Value == `"code"` {
				str(n.Value)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if isCode(n.X) {
					str(n.Y)
				}
				if isCode(n.Y) {
					str(n.X)
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i < len(n.Values) && (strings.HasPrefix(name.Name, "Code") || strings.HasPrefix(name.Name, "code")) {
					str(n.Values[i])
				}
			}
		}
		return true
	})
}

// TestNoLiteralCodes: the handlers spell no domain code out (they use the
// agent.Code constant), and each transport code of their own is spelled
// once, where it is defined, so a code is never a copy of another.
func TestNoLiteralCodes(t *testing.T) {
	domain := agentCodes(t)
	fset := token.NewFileSet()
	defined := map[string]token.Position{}
	seen := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		codeLiterals(f, func(lit *ast.BasicLit) {
			seen++
			code, _ := strconv.Unquote(lit.Value)
			pos := fset.Position(lit.Pos())
			if c, ok := domain[code]; ok {
				t.Errorf("%s: the code %q is spelled out; use %s", pos, code, c)
				return
			}
			if first, dup := defined[code]; dup {
				t.Errorf("%s: the code %q is already defined at %s; use that", pos, code, first)
				return
			}
			defined[code] = pos
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("found no code literals at all; the scan is broken")
	}
}
