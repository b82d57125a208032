package agent

import (
	"errors"
	"strings"
)

// MaxNodeNameLen bounds a node name (Heartbeat.Name), part of the wire
// contract: every node refuses a heartbeat whose name breaks the rule.
const MaxNodeNameLen = 32

// ErrNodeName is CheckNodeName's refusal.
var ErrNodeName = errors.New("a node name is 1-32 characters of a-z, 0-9, '-' and '.', starting and ending with a letter or digit")

// CheckNodeName checks a node's name: a short label people read on the
// pages ("node-b"), never an identity (two nodes may pick the same one;
// the peer ID tells them apart). The rule is ASCII lower case, digits,
// '-' and '.', so that no name can imitate another with look-alike or
// invisible characters. "" is allowed: a node that names itself nothing
// (or an older one) is shown by its peer ID.
func CheckNodeName(s string) error {
	if s == "" {
		return nil
	}
	if len(s) > MaxNodeNameLen {
		return ErrNodeName
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' && c != '.' || i == 0 || i == len(s)-1) {
			return ErrNodeName
		}
	}
	return nil
}

// SanitizeNodeName makes a valid node name of s (a host name, say):
// lower case, the characters outside the rule as '-', runs of them
// folded, the first label of a dotted host name only, cut to
// MaxNodeNameLen. It returns "" when nothing usable is left.
func SanitizeNodeName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if head, _, ok := strings.Cut(s, "."); ok && head != "" {
		s = head // "box.example.com" → "box"
	}
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	out := b.String()
	if len(out) > MaxNodeNameLen {
		out = out[:MaxNodeNameLen]
	}
	out = strings.TrimRight(out, "-.")
	if CheckNodeName(out) != nil {
		return ""
	}
	return out
}
