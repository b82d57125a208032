package agent

import "unicode"

// Join controls and the emoji variation selectors: the only invisible
// characters a name may carry, and only where they shape what is around
// them (see invisibleAllowed).
const (
	zwnj = '\u200c'
	zwj  = '\u200d'
	vs15 = '\ufe0e' // text presentation
	vs16 = '\ufe0f' // emoji presentation
)

// checkVisibleName refuses a name that renders blank or hides characters,
// so two listings cannot look alike while differing in invisible code
// points, and a blank name cannot pose as no name at all. Both rules apply
// to records from the network as well as to forms and the API, because
// every record passes Validate.
func checkVisibleName(ve *ValidationError, field, s string) {
	rs := []rune(s)
	visible := false
	for i, r := range rs {
		if isInvisible(r) {
			if !invisibleAllowed(rs, i) {
				ve.add(field, "must not contain invisible or formatting characters (%U)", r)
				return
			}
			continue
		}
		if unicode.In(r, unicode.L, unicode.N, unicode.P, unicode.S) {
			visible = true
		}
	}
	if !visible {
		ve.add(field, "must contain a visible letter, digit or symbol; this one would render blank")
	}
}

// isInvisible reports code points that render as nothing, or as a blank
// that is not a space: default-ignorable code points (UAX #44: format
// characters, variation selectors, tag characters, Hangul fillers, ...) and
// the letters and symbols known to draw blank. Prepended concatenation
// marks are format characters that do draw a glyph.
func isInvisible(r rune) bool {
	switch r {
	case '\u2800', // braille pattern blank
		'\U00016fe4', // Khitan small script filler
		'\U0001d159': // musical symbol null notehead
		return true
	}
	return unicode.Is(unicode.Cf, r) && !unicode.Is(unicode.Prepended_Concatenation_Mark, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) ||
		unicode.Is(unicode.Noncharacter_Code_Point, r)
}

// invisibleAllowed reports whether the invisible rs[i] does visible work.
// ZWJ and ZWNJ join emoji into one (👩‍💻, 🏳️‍🌈) and shape letters in
// Arabic, Persian and Indic scripts, where names need them; they are allowed
// only between two emoji or two characters of one such script, never next
// to Latin, Greek or Cyrillic letters, where they would only hide a
// difference. An emoji or text presentation selector is allowed once,
// right after a visible character (❤️, #️⃣). Everything else is refused,
// including tag characters (so the three subdivision flags cannot be
// written) and the other variation selectors, which can smuggle hidden text.
func invisibleAllowed(rs []rune, i int) bool {
	switch rs[i] {
	case vs15, vs16:
		return i > 0 && !isInvisible(rs[i-1]) && !unicode.Is(unicode.M, rs[i-1])
	case zwj, zwnj:
		if i == 0 || i == len(rs)-1 {
			return false
		}
		prev, next := rs[i-1], rs[i+1]
		if isEmojiPart(prev) && unicode.Is(unicode.So, next) {
			return true
		}
		j := i - 1
		for j > 0 && unicode.Is(unicode.Inherited, rs[j]) { // marks on the previous letter
			j--
		}
		sp, sn := scriptOf(rs[j]), scriptOf(next)
		return sp == sn && joiningScript(sp)
	}
	return false
}

// isEmojiPart reports the characters an emoji ZWJ sequence joins: emoji
// (So), a skin-tone modifier, or the emoji selector ending the previous one.
func isEmojiPart(r rune) bool {
	return unicode.Is(unicode.So, r) || r >= 0x1f3fb && r <= 0x1f3ff || r == vs16
}

// joiningScript reports scripts whose letters ZWJ and ZWNJ may shape.
func joiningScript(script string) bool {
	switch script {
	case "", "Common", "Inherited", "Latin", "Greek", "Cyrillic", "Armenian":
		return false
	}
	return true
}

// scriptOf returns the Unicode script of r ("Latin", "Cyrillic", "Common",
// ...), or "" for an unassigned code point.
func scriptOf(r rune) string {
	if r < 0x80 {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			return "Latin"
		}
		return "Common"
	}
	for _, name := range likelyScripts {
		if unicode.Is(unicode.Scripts[name], r) {
			return name
		}
	}
	for name, table := range unicode.Scripts {
		if unicode.Is(table, r) {
			return name
		}
	}
	return ""
}

// likelyScripts are tried before the whole table, so names in common
// scripts cost a handful of lookups.
var likelyScripts = []string{"Latin", "Common", "Inherited", "Cyrillic", "Greek", "Han", "Hiragana", "Katakana", "Hangul", "Arabic"}

// MixedScripts returns the scripts of s, in order of appearance, when s
// mixes them in a way that can imitate another name ("Pаypal" with a
// Cyrillic а), and nil when it does not. It follows the "moderately
// restrictive" level of Unicode TS #39: one script; Latin with Han and
// Hiragana/Katakana, Bopomofo or Hangul (Japanese, Chinese, Korean); or
// Latin with one other recommended script (UAX #31) that has few Latin
// look-alike letters pass. Latin with Cyrillic, Greek or Armenian, and any
// other mix, is flagged.
// Digits, punctuation, emoji and combining marks (Common, Inherited) count
// for no script. It does not catch a name written wholly in look-alike
// letters of one script; that needs the confusables data of TS #39.
func MixedScripts(s string) []string {
	var scripts []string
	seen := map[string]bool{}
	for _, r := range s {
		sc := scriptOf(r)
		if sc == "" || sc == "Common" || sc == "Inherited" || seen[sc] {
			continue
		}
		seen[sc] = true
		scripts = append(scripts, sc)
	}
	if len(scripts) < 2 {
		return nil
	}
	var others []string
	for _, sc := range scripts {
		if sc != "Latin" {
			others = append(others, sc)
		}
	}
	for _, cjk := range [][]string{{"Han", "Hiragana", "Katakana"}, {"Han", "Bopomofo"}, {"Han", "Hangul"}} {
		if subset(others, cjk) {
			return nil
		}
	}
	if len(others) == 1 && seen["Latin"] && latinCompanions[others[0]] {
		return nil
	}
	return scripts
}

// latinCompanions are the recommended scripts of UAX #31 (table 5) that
// may appear next to Latin: all but Cyrillic, Greek and Armenian, whose
// many Latin look-alikes (а, ο, օ) are the classic spoof.
var latinCompanions = map[string]bool{
	"Arabic": true, "Bengali": true, "Bopomofo": true, "Devanagari": true, "Ethiopic": true, "Georgian": true,
	"Gujarati": true, "Gurmukhi": true, "Han": true, "Hangul": true, "Hebrew": true, "Hiragana": true,
	"Kannada": true, "Katakana": true, "Khmer": true, "Lao": true, "Malayalam": true, "Myanmar": true,
	"Oriya": true, "Sinhala": true, "Tamil": true, "Telugu": true, "Thaana": true, "Thai": true, "Tibetan": true,
}

func subset(xs, of []string) bool {
	for _, x := range xs {
		found := false
		for _, o := range of {
			found = found || x == o
		}
		if !found {
			return false
		}
	}
	return true
}
