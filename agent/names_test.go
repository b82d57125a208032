package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// invisibleNames render blank or hide characters: a name of them would
// pass for another agent's, or for none.
var invisibleNames = map[string]string{
	"hangul filler":          "\u3164",
	"hangul fillers spaced":  " \u3164 \u3164 ",
	"choseong filler":        "\u115f",
	"jungseong filler":       "\u1160",
	"halfwidth filler":       "\uffa0",
	"zero width space":       "\u200b",
	"zero width spaces":      "\u200b\u200b\u200b",
	"braille blank":          "\u2800\u2800",
	"tag characters":         "\U000e0041\U000e0042",
	"byte order mark":        "\ufeff",
	"word joiner":            "\u2060",
	"invisible plus":         "\u2064",
	"mongolian vowel sep":    "\u180e",
	"variation selector":     "\ufe0f",
	"grapheme joiner":        "\u034f",
	"combining mark alone":   "\u0301\u0301",
	"null notehead":          "\U0001d159",
	"khitan filler":          "\U00016fe4",
	"soft hyphen":            "\u00ad",
	"zwj alone":              "\u200d",
	"ideographic space only": "\u3000\u3000",
	"hidden in latin zwsp":   "Pay\u200bpal",
	"hidden bom":             "Weather\ufeffBot",
	"hidden tag text":        "Bot\U000e0069\U000e0067\U000e006e\U000e006f\U000e0072\U000e0065",
	"hidden braille blank":   "Weather\u2800Bot",
	"hidden hangul filler":   "Weather\u3164Bot",
	"zwj between latin":      "pay\u200dpal",
	"zwnj between latin":     "pay\u200cpal",
	"zwj latin and emoji":    "Bot\u200d🤖",
	"vs1 after letter":       "Bot\ufe00",
	"ideographic vs":         "Bot\U000e0100",
	"two emoji selectors":    "❤\ufe0f\ufe0f",
	"selector at start":      "\ufe0fBot",
	"invisible function":     "f\u2061x",
	"noncharacter":           "Bot\ufffe",
}

// visibleNames must stay valid: emoji sequences and scripts that need the
// join controls.
var visibleNames = []string{
	"Weather Bot",
	"Mañana",
	"A\u030angstrom",
	"東京 Tokyo",
	"❤\ufe0f Helper",
	"👩\u200d💻 Coder",
	"🏳\ufe0f\u200d🌈 Pride",
	"👩🏽\u200d💻 Dev",
	"#\ufe0f\u20e3 Hash",
	"👍🏽",
	"می\u200cخواهم",      // Persian, ZWNJ between Arabic letters
	"क्\u200dष",          // Devanagari, ZWJ after a virama
	"Ελληνικά",           // one script
	"Weather Bot ☀",      // symbol
	"Bot 2",              // digits
	"Arabic \u0600 sign", // a prepended concatenation mark draws a glyph
}

func TestValidateRefusesInvisibleNames(t *testing.T) {
	key := newKey(t)
	for name, dn := range invisibleNames {
		t.Run(name, func(t *testing.T) {
			for _, field := range []string{"display_name", "skills[0].name"} {
				r := signedRecord(t, key, testNow)
				if field == "display_name" {
					r.DisplayName = dn
				} else {
					r.Skills[0].Name = dn
				}
				var ve *ValidationError
				if err := r.Validate(testNow); !errors.As(err, &ve) || ve.Fields[field] == "" {
					t.Fatalf("%s %q: Validate = %v, want a %s error", field, dn, err, field)
				}
			}
		})
	}
}

func TestValidateAcceptsVisibleNames(t *testing.T) {
	key := newKey(t)
	for _, dn := range visibleNames {
		r := signedRecord(t, key, testNow)
		r.DisplayName, r.Skills[0].Name = dn, dn
		if err := r.Validate(testNow); err != nil {
			t.Errorf("%q: Validate = %v", dn, err)
		}
	}
}

// TestOpenRefusesInvisibleName: a record signed elsewhere with a blank
// display name is refused when it arrives from the network.
func TestOpenRefusesInvisibleName(t *testing.T) {
	key := newKey(t)
	for _, dn := range []string{"\u3164", "Pay\u200bpal"} {
		r := signedRecord(t, key, testNow)
		r.DisplayName = dn
		rec, err := Open(sealRaw(t, r, key), testNow)
		var ve *ValidationError
		if !errors.Is(err, ErrInvalidField) || !errors.As(err, &ve) || ve.Fields["display_name"] == "" || rec != nil {
			t.Fatalf("Open(display name %q) = %v, want a display_name error", dn, err)
		}
	}
}

func TestVisibleNameMessages(t *testing.T) {
	var ve ValidationError
	checkVisibleName(&ve, "display_name", "\u3164")
	if msg := ve.Fields["display_name"]; !strings.Contains(msg, "U+3164") {
		t.Errorf("hidden-character message %q does not name the code point", msg)
	}
	ve = ValidationError{}
	checkVisibleName(&ve, "display_name", "\u0301")
	if msg := ve.Fields["display_name"]; !strings.Contains(msg, "blank") {
		t.Errorf("blank-name message %q does not say it renders blank", msg)
	}
}

func TestMixedScripts(t *testing.T) {
	cases := map[string][]string{
		"P\u0430ypal":      {"Latin", "Cyrillic"}, // Cyrillic а
		"\u0391pple":       {"Greek", "Latin"},    // Greek Alpha
		"Привет Ελλάδα":    {"Cyrillic", "Greek"},
		"G\u0585ogle":      {"Latin", "Armenian"}, // Armenian օ
		"Gеorgia ქართული":  {"Latin", "Cyrillic", "Georgian"},
		"東京 Москва":        {"Han", "Cyrillic"},
		"PayPal":           nil,
		"Weather Bot 2":    nil,
		"Привет":           nil,
		"Ελληνικά":         nil,
		"東京とトウキョウ Tokyo":   nil,
		"서울 Seoul 漢字":      nil,
		"台北 ㄅㄆ":            nil,
		"Delhi दिल्ली":     nil,
		"Tel Aviv תל אביב": nil,
		"Bot 🤖 ☀":          nil,
		"Cafe\u0301":       nil,
		"":                 nil,
		"123 — !":          nil,
		"Latin ქართული":    nil,
		"Ꭺpple Cherokee":   {"Cherokee", "Latin"},
		"दिल्ली বাংলা":     {"Devanagari", "Bengali"},
	}
	for s, want := range cases {
		if got := MixedScripts(s); !slices.Equal(got, want) {
			t.Errorf("MixedScripts(%q) = %q, want %q", s, got, want)
		}
	}
}
