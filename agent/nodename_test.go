package agent

import (
	"strings"
	"testing"
)

func TestCheckNodeName(t *testing.T) {
	for _, ok := range []string{"", "node-a", "a", "box.lan", "n0", strings.Repeat("a", MaxNodeNameLen)} {
		if err := CheckNodeName(ok); err != nil {
			t.Errorf("CheckNodeName(%q) = %v, want ok", ok, err)
		}
	}
	for _, bad := range []string{"-a", "a-", ".a", "Node-A", "node a", "nöde", "a\u200bb", strings.Repeat("a", MaxNodeNameLen+1), "a/b"} {
		if err := CheckNodeName(bad); err == nil {
			t.Errorf("CheckNodeName(%q) = nil, want an error", bad)
		}
	}
}

func TestSanitizeNodeName(t *testing.T) {
	for in, want := range map[string]string{
		"MyBox.example.com":        "mybox",
		"Jane's MacBook Pro":       "jane-s-macbook-pro",
		"  --weird__host--  ":      "weird-host",
		"":                         "",
		"ééé":                      "",
		strings.Repeat("ab", 40):   strings.Repeat("ab", 16),
		"ip-10-0-0-1.ec2.internal": "ip-10-0-0-1",
	} {
		got := SanitizeNodeName(in)
		if got != want {
			t.Errorf("SanitizeNodeName(%q) = %q, want %q", in, got, want)
		}
		if err := CheckNodeName(got); err != nil {
			t.Errorf("SanitizeNodeName(%q) = %q, which CheckNodeName refuses", in, got)
		}
	}
}
