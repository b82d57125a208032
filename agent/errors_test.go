package agent

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// sentinels is every domain error this package defines, by name. errors.Is
// matches an Error by its code, so two of them with one code cannot be
// told apart; TestSentinelsListed keeps the table complete.
var sentinels = map[string]*Error{
	"ErrUnknownApproval":    ErrUnknownApproval,
	"ErrUnknownAgent":       ErrUnknownAgent,
	"ErrBackendTimeout":     ErrBackendTimeout,
	"ErrBackendUnavailable": ErrBackendUnavailable,
	"ErrBackendRejected":    ErrBackendRejected,
	"ErrReplyTooLarge":      ErrReplyTooLarge,
	"ErrBlockedAddress":     ErrBlockedAddress,
	"ErrOwnerChanged":       ErrOwnerChanged,
	"ErrBadBackendReply":    ErrBadBackendReply,
	"ErrAgentBusy":          ErrAgentBusy,
	"ErrHostUnreachable":    ErrHostUnreachable,
	"ErrModelBusy":          ErrModelBusy,
	"ErrHistoryRequired":    ErrHistoryRequired,
	"ErrDelegationLoop":     ErrDelegationLoop,
	"ErrDelegationDepth":    ErrDelegationDepth,
	"ErrDelegationBudget":   ErrDelegationBudget,
}

// TestSentinelCodesDistinct: one code per error kind, so errors.Is tells
// every pair of sentinels apart.
func TestSentinelCodesDistinct(t *testing.T) {
	byCode := map[Code]string{}
	for name, e := range sentinels {
		if other, dup := byCode[e.Code]; dup {
			t.Errorf("%s and %s share the code %q", name, other, e.Code)
		}
		byCode[e.Code] = name
	}
	for a, ea := range sentinels {
		for b, eb := range sentinels {
			if a != b && errors.Is(ea, eb) {
				t.Errorf("errors.Is(%s, %s) is true", a, b)
			}
		}
	}
}

// packageFiles parses this package's non-test Go files.
func packageFiles(t *testing.T) []*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if filepath.Ext(n) != ".go" || len(n) > 8 && n[len(n)-8:] == "_test.go" {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// TestSentinelsListed: every package-level variable built by sentinel or
// NewError is in the sentinels table, so TestSentinelCodesDistinct sees a
// new one.
func TestSentinelsListed(t *testing.T) {
	var found []string
	for _, f := range packageFiles(t) {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, v := range vs.Values {
					call, ok := v.(*ast.CallExpr)
					if !ok {
						continue
					}
					if fn, ok := call.Fun.(*ast.Ident); ok && (fn.Name == "sentinel" || fn.Name == "NewError") {
						found = append(found, vs.Names[i].Name)
					}
				}
			}
		}
	}
	if len(found) == 0 {
		t.Fatal("found no sentinels in the package source")
	}
	for _, name := range found {
		if _, ok := sentinels[name]; !ok {
			t.Errorf("%s is not in the sentinels table of errors_test.go", name)
		}
	}
	for name := range sentinels {
		if !slices.Contains(found, name) {
			t.Errorf("the sentinels table names %s, which the source does not define", name)
		}
	}
}

// TestCodeValuesDistinct: no two Code constants spell the same code.
func TestCodeValuesDistinct(t *testing.T) {
	byValue := map[string]string{}
	for _, f := range packageFiles(t) {
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
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Errorf("%s is not a string literal", vs.Names[i].Name)
						continue
					}
					code, _ := strconv.Unquote(lit.Value)
					if other, dup := byValue[code]; dup {
						t.Errorf("%s and %s are both %q", vs.Names[i].Name, other, code)
					}
					byValue[code] = vs.Names[i].Name
				}
			}
		}
	}
	if len(byValue) < 10 {
		t.Fatalf("found %d Code constants; the parse missed them", len(byValue))
	}
}

// TestTurnErrorCodes: a host's code maps back to its sentinel, and the code
// a host sent for an oversized reply before CodeAgentReplyTooLarge (the
// malformed-reply code) still maps to a failed backend.
func TestTurnErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		code Code
		want *Error
	}{
		{CodeAgentReplyTooLarge, ErrReplyTooLarge},
		{CodeAgentBadReply, ErrBadBackendReply},
		{CodeRateLimited, ErrAgentBusy},
		{CodeAgentTimeout, ErrBackendTimeout},
		{CodeModelBusy, ErrModelBusy},
		{"no_such_code", nil},
	} {
		if got := TurnError(tc.code); got != tc.want {
			t.Errorf("TurnError(%q) = %v, want %v", tc.code, got, tc.want)
		}
	}
}
