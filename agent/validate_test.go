package agent

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestValidateValid(t *testing.T) {
	key := newKey(t)
	cases := map[string]func(r *Record){
		"full":                          func(r *Record) {},
		"minimal":                       func(r *Record) { *r = *minimalRecordFor(t, r) },
		"name min length":               func(r *Record) { r.Name = "abc" },
		"name max length":               func(r *Record) { r.Name = strings.Repeat("a", MaxNameLen) },
		"name digits and hyphens":       func(r *Record) { r.Name = "0-9-a" },
		"description at limit":          func(r *Record) { r.Description = strings.Repeat("x", MaxDescriptionBytes) },
		"description multi-line":        func(r *Record) { r.Description = "a\nb\r\nc\td" },
		"description empty":             func(r *Record) { r.Description = "" },
		"description unicode":           func(r *Record) { r.Description = "Wetter für München — 天気 🌦" },
		"16 tags":                       func(r *Record) { r.Tags = nTags(MaxTags) },
		"no tags":                       func(r *Record) { r.Tags = nil },
		"tag max length":                func(r *Record) { r.Tags = []string{strings.Repeat("t", MaxTagLen)} },
		"one-letter tag":                func(r *Record) { r.Tags = []string{"x"} },
		"16 skills":                     func(r *Record) { r.Skills = nSkills(MaxSkills) },
		"skill 8 examples":              func(r *Record) { r.Skills[0].Examples = make8("ex") },
		"display name max":              func(r *Record) { r.DisplayName = strings.Repeat("D", MaxDisplayNameLen) },
		"no owner":                      func(r *Record) { r.Owner = "" },
		"no endpoints":                  func(r *Record) { r.Endpoints = nil },
		"8 endpoints":                   func(r *Record) { r.Endpoints = nEndpoints(MaxEndpoints) },
		"http endpoint":                 func(r *Record) { r.Endpoints[1].URL = "http://93.184.216.34:8080/mcp" },
		"issued_at within clock skew":   func(r *Record) { r.IssuedAt = testNow.Add(ClockSkew); r.ExpiresAt = r.IssuedAt.Add(time.Hour) },
		"issued_at in the past":         func(r *Record) { r.IssuedAt = testNow.Add(-time.Hour); r.ExpiresAt = testNow.Add(time.Second) },
		"ttl exactly MaxTTL":            func(r *Record) { r.ExpiresAt = r.IssuedAt.Add(MaxTTL) },
		"tombstone":                     func(r *Record) { r.Tombstone = true },
		"seq max":                       func(r *Record) { r.Seq = ^uint64(0) },
		"version empty":                 func(r *Record) { r.Version = "" },
		"version max":                   func(r *Record) { r.Version = "1.0.0-" + strings.Repeat("a", MaxVersionLen-6) },
		"version pre-release":           func(r *Record) { r.Version = "2.0.0-beta.1" },
		"skill description at limit":    func(r *Record) { r.Skills[0].Description = strings.Repeat("s", MaxSkillTextLen) },
		"libp2p endpoint of other peer": func(r *Record) { r.Endpoints[0].PeerID = peerIDOf(t, newKey(t)) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			r := signedRecord(t, key, testNow)
			mutate(r)
			if err := r.Validate(testNow); err != nil {
				t.Fatalf("Validate = %v", err)
			}
		})
	}
}

func minimalRecordFor(t *testing.T, full *Record) *Record {
	r := minimalRecord(testNow)
	r.Publisher = full.Publisher
	r.ID = full.ID
	return r
}

func TestValidateRules(t *testing.T) {
	key := newKey(t)
	cases := []struct {
		name   string
		field  string
		mutate func(r *Record)
	}{
		{"name too short", "name", func(r *Record) { r.Name = "ab" }},
		{"name empty", "name", func(r *Record) { r.Name = "" }},
		{"name too long", "name", func(r *Record) { r.Name = strings.Repeat("a", MaxNameLen+1) }},
		{"name upper case", "name", func(r *Record) { r.Name = "Weather-bot" }},
		{"name double hyphen", "name", func(r *Record) { r.Name = "weather--bot" }},
		{"name leading hyphen", "name", func(r *Record) { r.Name = "-weather" }},
		{"name trailing hyphen", "name", func(r *Record) { r.Name = "weather-" }},
		{"name underscore", "name", func(r *Record) { r.Name = "weather_bot" }},
		{"name space", "name", func(r *Record) { r.Name = "weather bot" }},
		{"name non-ascii", "name", func(r *Record) { r.Name = "wéather" }},
		{"id empty", "id", func(r *Record) { r.ID = "" }},
		{"id wrong shape", "id", func(r *Record) { r.ID = strings.ToUpper(r.ID) }},
		{"display name empty", "display_name", func(r *Record) { r.DisplayName = "" }},
		{"display name blank", "display_name", func(r *Record) { r.DisplayName = "  \u00a0 " }},
		{"display name newline", "display_name", func(r *Record) { r.DisplayName = "Weather\nBot" }},
		{"display name carriage return", "display_name", func(r *Record) { r.DisplayName = "Weather\rBot" }},
		{"display name tab", "display_name", func(r *Record) { r.DisplayName = "Weather\tBot" }},
		{"display name too long", "display_name", func(r *Record) { r.DisplayName = strings.Repeat("D", MaxDisplayNameLen+1) }},
		{"display name escape", "display_name", func(r *Record) { r.DisplayName = "Weather\x1b[31mBot" }},
		{"display name NEL", "display_name", func(r *Record) { r.DisplayName = "Weather\u0085Bot" }},
		{"display name invalid utf-8", "display_name", func(r *Record) { r.DisplayName = "Weather\xffBot" }},
		{"description too long", "description", func(r *Record) { r.Description = strings.Repeat("x", MaxDescriptionBytes+1) }},
		{"description NUL", "description", func(r *Record) { r.Description = "a\x00b" }},
		{"description DEL", "description", func(r *Record) { r.Description = "a\x7fb" }},
		{"description bell", "description", func(r *Record) { r.Description = "a\ab" }},
		{"description C1 control", "description", func(r *Record) { r.Description = "a\u009bb" }},
		{"description invalid utf-8", "description", func(r *Record) { r.Description = "a\xc3" }},
		{"17 tags", "tags", func(r *Record) { r.Tags = nTags(MaxTags + 1) }},
		{"tag upper case", "tags[1]", func(r *Record) { r.Tags[1] = "Forecast" }},
		{"tag with space", "tags[2]", func(r *Record) { r.Tags[2] = "geo data" }},
		{"tag empty", "tags[0]", func(r *Record) { r.Tags[0] = "" }},
		{"tag too long", "tags[0]", func(r *Record) { r.Tags[0] = strings.Repeat("t", MaxTagLen+1) }},
		{"tag double hyphen", "tags[0]", func(r *Record) { r.Tags[0] = "a--b" }},
		{"duplicate tag", "tags[2]", func(r *Record) { r.Tags[2] = r.Tags[0] }},
		{"17 skills", "skills", func(r *Record) { r.Skills = nSkills(MaxSkills + 1) }},
		{"skill id empty", "skills[1].id", func(r *Record) { r.Skills[1].ID = "" }},
		{"skill id upper case", "skills[0].id", func(r *Record) { r.Skills[0].ID = "Forecast" }},
		{"skill id too long", "skills[0].id", func(r *Record) { r.Skills[0].ID = strings.Repeat("s", MaxNameLen+1) }},
		{"duplicate skill id", "skills[1].id", func(r *Record) { r.Skills[1].ID = r.Skills[0].ID }},
		{"skill name empty", "skills[0].name", func(r *Record) { r.Skills[0].Name = "" }},
		{"skill name blank", "skills[0].name", func(r *Record) { r.Skills[0].Name = "   " }},
		{"skill name multi-line", "skills[0].name", func(r *Record) { r.Skills[0].Name = "Fore\ncast" }},
		{"skill name too long", "skills[0].name", func(r *Record) { r.Skills[0].Name = strings.Repeat("n", MaxDisplayNameLen+1) }},
		{"skill description too long", "skills[0].description", func(r *Record) { r.Skills[0].Description = strings.Repeat("d", MaxSkillTextLen+1) }},
		{"skill description control", "skills[1].description", func(r *Record) { r.Skills[1].Description = "\x00" }},
		{"skill 9 examples", "skills[0].examples", func(r *Record) { r.Skills[0].Examples = append(make8("ex"), "one more") }},
		{"skill example control", "skills[0].examples[1]", func(r *Record) { r.Skills[0].Examples[1] = "bad\x08" }},
		{"skill example too long", "skills[0].examples[0]", func(r *Record) { r.Skills[0].Examples[0] = strings.Repeat("e", MaxSkillTextLen+1) }},
		{"version too long", "version", func(r *Record) { r.Version = strings.Repeat("1", MaxVersionLen+1) }},
		{"version multi-line", "version", func(r *Record) { r.Version = "1\n2" }},
		{"version with spaces", "version", func(r *Record) { r.Version = "not a version with spaces" }},
		{"version not semver", "version", func(r *Record) { r.Version = "1.0" }},
		{"owner not a handle", "owner", func(r *Record) { r.Owner = "Alice Smith" }},
		{"owner too long", "owner", func(r *Record) { r.Owner = strings.Repeat("o", MaxOwnerLen+1) }},
		{"publisher empty", "publisher", func(r *Record) { r.Publisher = "" }},
		{"publisher not a peer id", "publisher", func(r *Record) { r.Publisher = "not-a-peer-id" }},
		{"9 endpoints", "endpoints", func(r *Record) { r.Endpoints = nEndpoints(MaxEndpoints + 1) }},
		{"endpoint kind unknown", "endpoints[1].kind", func(r *Record) { r.Endpoints[1].Kind = "smtp" }},
		{"endpoint kind empty", "endpoints[2].kind", func(r *Record) { r.Endpoints[2].Kind = "" }},
		{"libp2p endpoint no peer", "endpoints[0].peer_id", func(r *Record) { r.Endpoints[0].PeerID = "" }},
		{"libp2p endpoint bad peer", "endpoints[0].peer_id", func(r *Record) { r.Endpoints[0].PeerID = "QmNope" }},
		{"libp2p endpoint no protocol", "endpoints[0].protocol", func(r *Record) { r.Endpoints[0].Protocol = "" }},
		{"libp2p endpoint wrong protocol", "endpoints[0].protocol", func(r *Record) { r.Endpoints[0].Protocol = "/ipfs/kad/1.0.0" }},
		{"http-mcp no url", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "" }},
		{"http-mcp ftp url", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "ftp://example.com/mcp" }},
		{"http-mcp javascript url", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "javascript:alert(1)" }},
		{"http-mcp relative url", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "/mcp" }},
		{"http-mcp no host", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "https:///mcp" }},
		{"http-mcp credentials", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "https://user:pw@example.com/mcp" }},
		{"http-mcp unparsable", "endpoints[1].url", func(r *Record) { r.Endpoints[1].URL = "https://exa mple.com/%zz" }},
		{"a2a-card url too long", "endpoints[2].url", func(r *Record) { r.Endpoints[2].URL = "https://example.com/" + strings.Repeat("a", MaxURLLen) }},
		{"issued_at zero", "issued_at", func(r *Record) { r.IssuedAt = time.Time{} }},
		{"issued_at in the future", "issued_at", func(r *Record) {
			r.IssuedAt = testNow.Add(ClockSkew + time.Second)
			r.ExpiresAt = r.IssuedAt.Add(time.Hour)
		}},
		{"expires_at zero", "expires_at", func(r *Record) { r.ExpiresAt = time.Time{} }},
		{"expires_at in the past", "expires_at", func(r *Record) {
			r.IssuedAt = testNow.Add(-2 * time.Hour)
			r.ExpiresAt = testNow.Add(-time.Hour)
		}},
		{"expires_at now", "expires_at", func(r *Record) {
			r.IssuedAt = testNow.Add(-time.Hour)
			r.ExpiresAt = testNow
		}},
		{"expires_at equals issued_at", "expires_at", func(r *Record) { r.ExpiresAt = r.IssuedAt }},
		{"expires_at before issued_at", "expires_at", func(r *Record) { r.ExpiresAt = r.IssuedAt.Add(-time.Second) }},
		{"expires_at beyond MaxTTL", "expires_at", func(r *Record) { r.ExpiresAt = r.IssuedAt.Add(MaxTTL + time.Second) }},
		{"seq zero", "seq", func(r *Record) { r.Seq = 0 }},
	}
	// Other fields a mutation breaks as a consequence.
	also := map[string][]string{"issued_at zero": {"expires_at"}}
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			r := signedRecord(t, key, testNow)
			c.mutate(r)
			err := r.Validate(testNow)
			if err == nil {
				t.Fatal("Validate = nil")
			}
			if !errors.Is(err, ErrInvalidField) {
				t.Fatalf("errors.Is(%v, ErrInvalidField) = false", err)
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *ValidationError", err)
			}
			if len(ve.Fields) != 1+len(also[c.name]) || ve.Fields[c.field] == "" {
				t.Fatalf("Fields = %q, want exactly %q (and %q)", ve.Fields, c.field, also[c.name])
			}
			for _, f := range also[c.name] {
				if ve.Fields[f] == "" {
					t.Fatalf("Fields = %q, want %q too", ve.Fields, f)
				}
			}
			if !strings.Contains(err.Error(), c.field+": ") {
				t.Fatalf("Error() = %q does not name %q", err, c.field)
			}
		})
	}
}

func TestValidateExpiryIgnoredWhenOpening(t *testing.T) {
	// Open's validation skips "expires_at must be in the future" (Open
	// reports ErrExpired itself) but keeps the other expires_at rules.
	key := newKey(t)
	r := signedRecord(t, key, testNow)
	late := testNow.Add(2 * DefaultTTL)
	if err := r.validateFields(late, false); err != nil {
		t.Fatalf("validateFields(expired, false) = %v", err)
	}
	if err := r.Validate(late); err == nil {
		t.Fatal("Validate(expired) = nil")
	}
	r.ExpiresAt = r.IssuedAt.Add(MaxTTL + time.Second)
	if err := r.validateFields(late, false); err == nil {
		t.Fatal("validateFields(ttl > MaxTTL, false) = nil")
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	r := &Record{Tags: []string{"ok", "Bad", "ok"}}
	err := r.Validate(testNow)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("Validate = %v", err)
	}
	for _, f := range []string{"name", "id", "display_name", "tags[1]", "tags[2]", "publisher", "issued_at", "expires_at", "seq"} {
		if ve.Fields[f] == "" {
			t.Errorf("no message for %q in %q", f, ve.Fields)
		}
	}
	// Error() is deterministic (sorted by field).
	if !strings.HasPrefix(err.Error(), "invalid agent record: display_name: ") {
		t.Errorf("Error() = %q", err)
	}
}

func TestValidationErrorAddKeepsFirst(t *testing.T) {
	var ve ValidationError
	if ve.orNil() != nil {
		t.Fatal("empty ValidationError is not nil")
	}
	ve.add("f", "first %d", 1)
	ve.add("f", "second")
	if ve.Fields["f"] != "first 1" {
		t.Fatalf("Fields[f] = %q", ve.Fields["f"])
	}
	if err := ve.orNil(); !errors.Is(err, ErrInvalidField) {
		t.Fatalf("orNil = %v", err)
	}
}

func TestIsSlug(t *testing.T) {
	cases := []struct {
		s        string
		min, max int
		want     bool
	}{
		{"abc", 3, 64, true},
		{"a-b-c", 1, 64, true},
		{"a1", 1, 2, true},
		{"ab", 3, 64, false},
		{"abcd", 1, 3, false},
		{"", 0, 5, true},
		{"", 1, 5, false},
		{"-", 1, 5, false},
		{"a-", 1, 5, false},
		{"-a", 1, 5, false},
		{"a--b", 1, 5, false},
		{"aB", 1, 5, false},
		{"a_b", 1, 5, false},
		{"a.b", 1, 5, false},
		{"a/b", 1, 5, false},
		{"é", 1, 5, false},
	}
	for _, c := range cases {
		if got := IsSlug(c.s, c.min, c.max); got != c.want {
			t.Errorf("IsSlug(%q, %d, %d) = %v, want %v", c.s, c.min, c.max, got, c.want)
		}
	}
}

func TestCheckHTTPURL(t *testing.T) {
	for _, u := range []string{"http://example.com", "https://example.com:8443/mcp?x=1#f", "http://[::1]:80/", "HTTPS://EXAMPLE.COM/"} {
		if err := CheckHTTPURL(u); err != nil {
			t.Errorf("CheckHTTPURL(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"", "example.com", "//example.com", "ftp://example.com", "file:///etc/passwd", "https://", "http://:80/", "https://u@example.com", "https://u:p@example.com", "http://%zz", "https://example.com/" + strings.Repeat("a", MaxURLLen)} {
		if err := CheckHTTPURL(u); err == nil {
			t.Errorf("CheckHTTPURL(%q) = nil", u)
		}
	}
}

func nTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("tag-%d", i)
	}
	return tags
}

func nSkills(n int) []Skill {
	skills := make([]Skill, n)
	for i := range skills {
		skills[i] = Skill{ID: fmt.Sprintf("skill-%d", i), Name: fmt.Sprintf("Skill %d", i)}
	}
	return skills
}

func nEndpoints(n int) []Endpoint {
	eps := make([]Endpoint, n)
	for i := range eps {
		eps[i] = Endpoint{Kind: EndpointHTTPMCP, URL: fmt.Sprintf("https://e%d.example.com/mcp", i)}
	}
	return eps
}

func make8(prefix string) []string {
	ex := make([]string, MaxSkillExamples)
	for i := range ex {
		ex[i] = fmt.Sprintf("%s %d", prefix, i)
	}
	return ex
}

// TestIsSemver: Semantic Versioning 2.0.0, without a leading "v".
func TestIsSemver(t *testing.T) {
	valid := []string{
		"0.0.0", "1.2.3", "10.20.30", "1.0.0-alpha", "1.0.0-beta.1", "1.0.0-0.3.7",
		"1.0.0-x.7.z.92", "1.0.0-alpha+001", "1.0.0+20130313144700", "1.0.0-rc.1+build.1",
		"1.0.0--", "1.0.0-0a",
	}
	invalid := []string{
		"", "1", "1.0", "v1.2.3", "V1.2.3", "1.2.3.4", "01.2.3", "1.02.3", "1.2.03",
		"1.2.3-", "1.2.3-01", "1.2.3-a..b", "1.2.3+", "1.2.3+a..b", " 1.2.3", "1.2.3 ",
		"not a version with spaces", "1.2.3-beta!", "1.2.x", "-1.2.3", "1.2.3\n",
	}
	for _, v := range valid {
		if !IsSemver(v) {
			t.Errorf("IsSemver(%q) = false, want true", v)
		}
	}
	for _, v := range invalid {
		if IsSemver(v) {
			t.Errorf("IsSemver(%q) = true, want false", v)
		}
	}
}
