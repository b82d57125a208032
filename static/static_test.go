package static

import (
	"regexp"
	"testing"
)

func TestPathAndLookup(t *testing.T) {
	hashed := regexp.MustCompile(`^/static/[a-z.]+\.[0-9a-f]{8}\.(css|js)$`)
	for _, name := range []string{"app.css", "app.js", "htmx.min.js"} {
		p := Path(name)
		if !hashed.MatchString(p) {
			t.Errorf("Path(%q) = %q", name, p)
		}
		a, ok := Lookup(p[len(Prefix):])
		if !ok || a.Name != name || len(a.Body) == 0 {
			t.Errorf("Lookup(%q) = %+v, %v", p, a, ok)
		}
	}
	if _, ok := Lookup("app.css"); ok {
		t.Error("unhashed name is served")
	}
	defer func() {
		if recover() == nil {
			t.Error("Path of an unknown asset does not panic")
		}
	}()
	Path("nope.css")
}
