package runtime

import (
	"regexp"
	"strings"
	"testing"
)

// TestToolNames: every namespaced name keeps to OpenAI's rule, names that
// had to change stay distinct, and servers sharing a host get distinct
// slugs.
func TestToolNames(t *testing.T) {
	rule := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	long := strings.Repeat("very_long_tool_name_", 6)
	names := []string{"add", "get.weather", "get/weather", "get weather", long, long + "2", "Ünïcode", ""}
	seen := map[string]string{}
	for _, n := range names {
		got := toolName("mcp_example_com", n)
		if !rule.MatchString(got) || !strings.HasPrefix(got, "mcp_example_com__") {
			t.Errorf("toolName(%q) = %q", n, got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q both named %q", prev, n, got)
		}
		seen[got] = n
	}
	if got := toolName("s", "add"); got != "s__add" {
		t.Errorf("a plain name changed: %q", got)
	}
	used := map[string]bool{}
	a, b := uniqueSlug(urlSlug("http://127.0.0.1:1234/mcp"), used), uniqueSlug(urlSlug("http://127.0.0.1:5678/mcp"), used)
	if a == b || a != "127_0_0_1" || b != "127_0_0_1_2" {
		t.Errorf("slugs %q, %q", a, b)
	}
	if got := urlSlug("https://www.a-very-long-host-name.tools.example.com/mcp"); len(got) > maxSlug || got == "" {
		t.Errorf("slug %q", got)
	}
	if got := slugify("!!!", "agent_abcdef"); got != "agent_abcdef" {
		t.Errorf("fallback slug %q", got)
	}
}
