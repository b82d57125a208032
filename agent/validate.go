package agent

import (
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/libp2p/go-libp2p/core/peer"
)

// ValidationError carries one precise message per bad field, keyed by the
// field's JSON name ("tags[2]" for an element), so forms and the API can show
// each message next to its field.
type ValidationError struct {
	Fields map[string]string
}

func (e *ValidationError) Error() string {
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+e.Fields[k])
	}
	return "invalid agent record: " + strings.Join(parts, "; ")
}

// Unwrap lets errors.Is(err, ErrInvalidField) match.
func (e *ValidationError) Unwrap() error { return ErrInvalidField }

func (e *ValidationError) add(field, format string, args ...any) {
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	if _, ok := e.Fields[field]; !ok {
		e.Fields[field] = fmt.Sprintf(format, args...)
	}
}

func (e *ValidationError) orNil() error {
	if len(e.Fields) == 0 {
		return nil
	}
	return e
}

// semverRe is the grammar of Semantic Versioning 2.0.0, as semver.org
// gives it: MAJOR.MINOR.PATCH, an optional -pre-release and +build, no
// leading zeros in numbers, no leading "v".
var semverRe = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// IsSemver reports whether s is a Semantic Versioning 2.0.0 version
// ("1.2.3", "2.0.0-beta.1", "1.0.0+build.5"). Pages show it as "v"+s, so
// a leading "v" is refused rather than shown twice.
func IsSemver(s string) bool { return semverRe.MatchString(s) }

// IsSlug reports whether s is lower-case letters, digits and single inner
// hyphens, between min and max bytes long.
func IsSlug(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-':
			if i == 0 || i == len(s)-1 || s[i-1] == '-' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Validate checks every field of a record that is about to be signed or has
// been received, as of now. It does not check the signature (Open does).
func (r *Record) Validate(now time.Time) error {
	return r.validateFields(now, true)
}

func (r *Record) validateFields(now time.Time, checkExpiry bool) error {
	var ve ValidationError
	if r.Name == "" {
		ve.add("name", "is required")
	} else if !IsSlug(r.Name, MinNameLen, MaxNameLen) {
		ve.add("name", "must be %d–%d characters of a–z, 0–9 and inner single hyphens", MinNameLen, MaxNameLen)
	}
	if !ValidID(r.ID) {
		ve.add("id", "must be the %d-character derived id", IDLen)
	}
	checkText(&ve, "display_name", r.DisplayName, MaxDisplayNameLen, true)
	if strings.TrimSpace(r.DisplayName) == "" {
		ve.add("display_name", "is required")
	}
	checkVisibleName(&ve, "display_name", r.DisplayName)
	checkText(&ve, "description", r.Description, MaxDescriptionBytes, false)
	if o := r.Origin; o != nil {
		checkText(&ve, "origin.registry", o.Registry, MaxOriginRegistryLen, true)
		checkText(&ve, "origin.name", o.Name, MaxOriginNameLen, true)
		checkText(&ve, "origin.version", o.Version, MaxOriginVersionLen, true)
		checkText(&ve, "origin.install", o.Install, MaxOriginInstallLen, true)
		if strings.TrimSpace(o.Registry) == "" || strings.TrimSpace(o.Name) == "" {
			ve.add("origin", "needs a registry and a name")
		}
	}
	if len(r.Tags) > MaxTags {
		ve.add("tags", "at most %d tags, got %d", MaxTags, len(r.Tags))
	}
	seen := map[string]bool{}
	for i, t := range r.Tags {
		if !IsSlug(t, 1, MaxTagLen) {
			ve.add(fmt.Sprintf("tags[%d]", i), "%q is not a tag: 1–%d characters of a–z, 0–9 and inner hyphens", t, MaxTagLen)
		} else if seen[t] {
			ve.add(fmt.Sprintf("tags[%d]", i), "%q appears twice", t)
		}
		seen[t] = true
	}
	if len(r.Skills) > MaxSkills {
		ve.add("skills", "at most %d skills, got %d", MaxSkills, len(r.Skills))
	}
	skillIDs := map[string]bool{}
	for i, s := range r.Skills {
		f := fmt.Sprintf("skills[%d]", i)
		if s.ID == "" {
			ve.add(f+".id", "is required")
		} else if !IsSlug(s.ID, 1, MaxNameLen) {
			ve.add(f+".id", "must be 1–%d characters of a–z, 0–9 and inner hyphens", MaxNameLen)
		} else if skillIDs[s.ID] {
			ve.add(f+".id", "%q appears twice", s.ID)
		}
		skillIDs[s.ID] = true
		if strings.TrimSpace(s.Name) == "" {
			ve.add(f+".name", "is required")
		}
		checkText(&ve, f+".name", s.Name, MaxDisplayNameLen, true)
		checkVisibleName(&ve, f+".name", s.Name)
		checkText(&ve, f+".description", s.Description, MaxSkillTextLen, false)
		if len(s.Examples) > MaxSkillExamples {
			ve.add(f+".examples", "at most %d examples", MaxSkillExamples)
		}
		for j, ex := range s.Examples {
			checkText(&ve, fmt.Sprintf("%s.examples[%d]", f, j), ex, MaxSkillTextLen, false)
		}
	}
	checkText(&ve, "version", r.Version, MaxVersionLen, true)
	if _, bad := ve.Fields["version"]; !bad && r.Version != "" && !IsSemver(r.Version) {
		ve.add("version", "must be a semantic version such as 1.2.0 or 2.0.0-beta.1 (no leading v)")
	}
	if r.Owner != "" && !IsSlug(r.Owner, 1, MaxOwnerLen) {
		ve.add("owner", "must be an account handle")
	}
	if _, err := peer.Decode(r.Publisher); err != nil {
		ve.add("publisher", "must be a peer ID")
	}
	if len(r.Endpoints) > MaxEndpoints {
		ve.add("endpoints", "at most %d endpoints", MaxEndpoints)
	}
	for i, e := range r.Endpoints {
		f := fmt.Sprintf("endpoints[%d]", i)
		switch e.Kind {
		case EndpointLibp2pMCP:
			if _, err := peer.Decode(e.PeerID); err != nil {
				ve.add(f+".peer_id", "must be a peer ID")
			}
			if e.Protocol != MCPProtocol {
				ve.add(f+".protocol", "must be %s", MCPProtocol)
			}
		case EndpointHTTPMCP, EndpointA2ACard:
			if err := CheckHTTPURL(e.URL); err != nil {
				ve.add(f+".url", "%v", err)
			}
		default:
			ve.add(f+".kind", "unknown endpoint kind %q", e.Kind)
		}
	}
	if r.IssuedAt.IsZero() {
		ve.add("issued_at", "is required")
	} else if r.IssuedAt.After(now.Add(ClockSkew)) {
		ve.add("issued_at", "is in the future")
	}
	switch {
	case r.ExpiresAt.IsZero():
		ve.add("expires_at", "is required")
	case !r.ExpiresAt.After(r.IssuedAt):
		ve.add("expires_at", "must be after issued_at")
	case r.ExpiresAt.Sub(r.IssuedAt) > MaxTTL:
		ve.add("expires_at", "must be within %s of issued_at", MaxTTL)
	case checkExpiry && !r.ExpiresAt.After(now):
		ve.add("expires_at", "must be in the future")
	}
	if r.Seq == 0 {
		ve.add("seq", "must be at least 1")
	}
	return ve.orNil()
}

func checkText(ve *ValidationError, field, s string, max int, singleLine bool) {
	if len(s) > max {
		ve.add(field, "at most %d bytes, got %d", max, len(s))
		return
	}
	if !utf8.ValidString(s) {
		ve.add(field, "must be valid UTF-8")
		return
	}
	for _, c := range s {
		if c == '\n' || c == '\t' || c == '\r' {
			if singleLine {
				ve.add(field, "must be a single line")
				return
			}
			continue
		}
		if unicode.IsControl(c) { // C0, DEL and C1 (U+0080–U+009F, e.g. NEL)
			ve.add(field, "must not contain control characters")
			return
		}
		if isBidiControl(c) || c == '\u2028' || c == '\u2029' {
			// Direction overrides can make a name read as another
			// (spoofing); line/paragraph separators break single lines.
			ve.add(field, "must not contain direction-override or separator characters")
			return
		}
	}
}

// CheckHTTPURL validates the syntax of a registered URL (scheme http or https,
// a host, no credentials). Where the URL may point is the SSRF guard's job.
func CheckHTTPURL(raw string) error {
	if raw == "" {
		return fmt.Errorf("is required")
	}
	if len(raw) > MaxURLLen {
		return fmt.Errorf("at most %d bytes", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("is not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("must start with http:// or https://")
	}
	if u.Hostname() == "" {
		return fmt.Errorf("must have a host")
	}
	if u.User != nil {
		return fmt.Errorf("must not carry credentials")
	}
	return nil
}

// isBidiControl reports the Unicode bidirectional formatting characters.
func isBidiControl(c rune) bool {
	return c >= '\u202a' && c <= '\u202e' || c >= '\u2066' && c <= '\u2069' || c == '\u200e' || c == '\u200f' || c == '\u061c'
}
