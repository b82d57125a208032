package store

import (
	"strings"
	"unicode"
)

// MaxTerms bounds the words of a text query, so a pasted essay cannot make
// a query plan explode.
const MaxTerms = 8

// SearchTerms splits a free-text query into lower-case words of letters and
// digits (everything else separates words), at most MaxTerms of at most 32
// runes each. Engines prefix-match each term and AND them, which is what a
// search-as-you-type box needs. Both engines use this so they agree on what a
// query means and no query syntax of either engine leaks through.
func SearchTerms(q string) []string {
	fields := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := make([]string, 0, len(fields))
	seen := map[string]bool{}
	for _, f := range fields {
		if r := []rune(f); len(r) > 32 {
			f = string(r[:32])
		}
		if seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
		if len(out) == MaxTerms {
			break
		}
	}
	return out
}
