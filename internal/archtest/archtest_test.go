package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// docPath is the design document, relative to the module root.
const docPath = "docs/architecture.md"

// layoutHeading opens the section whose tables this test reads.
const layoutHeading = "## 1. Layout, and what each package may import"

// rule is one row of the layout table: the packages it covers and the
// packages of this module they may import.
type rule struct {
	line     int
	paths    []string // module-relative; "x/..." is x and everything under it
	anything bool     // "everything"
	may      []string
}

// ban is one row of the "never import" table.
type ban struct {
	line  int
	paths []string
	never []string // import paths as Go spells them (std) or module-relative
}

// pkg is what the check needs of one package of the module.
type pkg struct {
	Path    string   // module-relative
	Imports []string // full import paths, the package's own code only
}

func TestArchitectureTableMatchesImports(t *testing.T) {
	root, module := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, docPath))
	if err != nil {
		t.Fatalf("read the design document: %v", err)
	}
	rules, bans, err := parseLayout(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", docPath, err)
	}
	pkgs := goList(t, root, module)
	for _, problem := range check(module, rules, bans, pkgs) {
		t.Error(problem)
	}
}

// TestCheckFindsEachKindOfDrift runs the check on a small made-up module
// and table, so a change that made it pass everything would fail here.
func TestCheckFindsEachKindOfDrift(t *testing.T) {
	doc := layoutHeading + `

| path | owns | may import |
|---|---|---|
| ` + "`cmd/app/`" + ` | main | everything |
| ` + "`core/`" + ` | the domain | nothing of ours (std) |
| ` + "`store/`, `store/sql/`" + ` | storage | ` + "`core`" + ` |
| ` + "`gone/`" + ` | removed long ago | ` + "`core`, `nosuch/...`" + ` |

| packages | never import |
|---|---|
| ` + "`core`" + ` | ` + "`net/http`" + ` |

## 2. Next
`
	rules, bans, err := parseLayout(doc)
	if err != nil {
		t.Fatal(err)
	}
	const m = "example.org/m"
	pkgs := []pkg{
		{Path: "cmd/app", Imports: []string{m + "/core", m + "/store", m + "/web"}},
		{Path: "core", Imports: []string{"net/http"}},
		{Path: "store", Imports: []string{m + "/core", "fmt"}},
		{Path: "store/sql", Imports: []string{m + "/store"}},
		{Path: "web", Imports: nil},
	}
	got := strings.Join(check(m, rules, bans, pkgs), "\n")
	for _, want := range []string{
		"web is not in the table",
		"store/sql imports store",
		"core imports net/http",
		"gone names no package",
		"nosuch/... names no package",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("check did not report %q; it said:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cmd/app imports") {
		t.Errorf("a row that allows everything was held to a list:\n%s", got)
	}
}

// check returns every way the table and the code disagree, each as a
// sentence that says what to change.
func check(module string, rules []rule, bans []ban, pkgs []pkg) []string {
	var problems []string
	known := map[string]bool{}
	for _, p := range pkgs {
		known[p.Path] = true
	}
	matchesSome := func(pattern string) bool {
		for _, p := range pkgs {
			if match(pattern, p.Path) {
				return true
			}
		}
		return false
	}
	for _, r := range rules {
		for _, p := range r.paths {
			if !matchesSome(p) {
				problems = append(problems, fmt.Sprintf("%s:%d: the row for %s names no package of the module: remove the row or fix the path", docPath, r.line, p))
			}
		}
		for _, p := range r.may {
			if !matchesSome(p) {
				problems = append(problems, fmt.Sprintf("%s:%d: \"may import\" %s names no package of the module: fix or remove it", docPath, r.line, p))
			}
		}
	}
	for _, p := range pkgs {
		var mine []rule
		for _, r := range rules {
			for _, path := range r.paths {
				if match(path, p.Path) {
					mine = append(mine, r)
					break
				}
			}
		}
		switch {
		case len(mine) == 0:
			problems = append(problems, fmt.Sprintf("%s is not in the table of %s §1: add a row that says what it owns and what it may import", p.Path, docPath))
			continue
		case len(mine) > 1:
			problems = append(problems, fmt.Sprintf("%s is covered by %d rows of %s §1 (lines %d and %d): keep one", p.Path, len(mine), docPath, mine[0].line, mine[1].line))
			continue
		}
		r := mine[0]
		for _, imp := range p.Imports {
			rel, ours := strings.CutPrefix(imp, module+"/")
			if !ours || r.anything {
				continue
			}
			allowed := false
			for _, m := range r.may {
				if match(m, rel) {
					allowed = true
					break
				}
			}
			if !allowed {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its row (%s:%d) does not allow: add it to the row's \"may import\" if the design wants it, else remove the import", p.Path, rel, docPath, r.line))
			}
		}
	}
	for _, b := range bans {
		for _, p := range pkgs {
			covered := false
			for _, path := range b.paths {
				covered = covered || match(path, p.Path)
			}
			if !covered {
				continue
			}
			for _, imp := range p.Imports {
				for _, never := range b.never {
					if imp == never || imp == module+"/"+never {
						problems = append(problems, fmt.Sprintf("%s imports %s, which %s:%d says it never imports: move that code to a surface", p.Path, never, docPath, b.line))
					}
				}
			}
		}
		for _, path := range b.paths {
			if !matchesSome(path) {
				problems = append(problems, fmt.Sprintf("%s:%d: \"never import\" row names %s, no package of the module", docPath, b.line, path))
			}
		}
	}
	sort.Strings(problems)
	return problems
}

// match reports whether the module-relative package path is pattern, or
// under it when pattern ends in "/...".
func match(pattern, path string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

// parseLayout reads the two tables of the layout section: the one whose
// header is "| path | owns | may import |" and the one whose header is
// "| packages | never import |".
func parseLayout(doc string) ([]rule, []ban, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == layoutHeading {
			start = i
			break
		}
	}
	if start < 0 {
		return nil, nil, fmt.Errorf("no heading %q: the layout table moved, so update this test with it", layoutHeading)
	}
	var (
		rules []rule
		bans  []ban
		table string
	)
	for i := start + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "|") {
			table = ""
			continue
		}
		cells := splitRow(l)
		switch {
		case table == "" && len(cells) == 3 && cells[0] == "path" && cells[2] == "may import":
			table = "layout"
			continue
		case table == "" && len(cells) == 2 && cells[0] == "packages" && cells[1] == "never import":
			table = "never"
			continue
		case table == "" || strings.Trim(l, "|-: ") == "":
			continue
		}
		n := i + 1
		switch table {
		case "layout":
			if len(cells) != 3 {
				return nil, nil, fmt.Errorf("line %d: a layout row has %d cells, want 3 (path | owns | may import)", n, len(cells))
			}
			r := rule{line: n, paths: packagePaths(cells[0]), may: packagePaths(cells[2])}
			r.anything = strings.Contains(cells[2], "everything")
			if len(r.paths) == 0 {
				return nil, nil, fmt.Errorf("line %d: the path cell names no package in backticks", n)
			}
			rules = append(rules, r)
		case "never":
			if len(cells) != 2 {
				return nil, nil, fmt.Errorf("line %d: a never-import row has %d cells, want 2", n, len(cells))
			}
			bans = append(bans, ban{line: n, paths: packagePaths(cells[0]), never: packagePaths(cells[1])})
		}
	}
	if len(rules) == 0 {
		return nil, nil, errors.New("no layout table (| path | owns | may import |) under " + layoutHeading)
	}
	return rules, bans, nil
}

// splitRow splits a Markdown table row into trimmed cells, ignoring a "|"
// inside backticks.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(l, "|")
	l = strings.TrimSuffix(l, "|")
	var cells []string
	var b strings.Builder
	code := false
	for _, r := range l {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(b.String()))
}

// packagePaths returns the backticked paths of a cell, without a final
// "/"; anything else in the cell is prose.
func packagePaths(cell string) []string {
	var out []string
	parts := strings.Split(cell, "`")
	for i := 1; i < len(parts); i += 2 {
		p := strings.TrimSuffix(strings.TrimSpace(parts[i]), "/")
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// moduleRoot finds the directory of go.mod above this package and the
// module's path.
func moduleRoot(t *testing.T) (dir, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatalf("%s/go.mod has no module line", dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// goList asks the go command for every package of the module and what its
// own (non-test) code imports.
func goList(t *testing.T, root, module string) []pkg {
	t.Helper()
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	cmd := exec.Command(goBin, "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v\n%s", root, err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("read go list's answer: %v", err)
		}
		rel, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if p.ImportPath == module {
			rel, ok = ".", true // a package at the root needs a row named "."
		}
		if !ok {
			continue
		}
		pkgs = append(pkgs, pkg{Path: rel, Imports: p.Imports})
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return pkgs
}
