package searchindex

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// words splits text into the index's words: lower-case runs of letters and
// digits, diacritics removed ("Café" → "cafe"), everything else a
// separator. It is store.SearchTerms' split applied to a listing's text,
// and store/sqlite's FTS5 tokenizer (unicode61, remove_diacritics 2), so a
// query means what it meant to the engine. fn gets each word once or more.
func words(text string, fn func(w string)) {
	start := -1
	ascii := true
	flush := func(end int) {
		if start < 0 {
			return
		}
		w := text[start:end]
		if ascii {
			fn(lowerASCII(w))
		} else {
			fn(fold(w))
		}
		start, ascii = -1, true
	}
	for i, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) && start >= 0 {
			if start < 0 {
				start = i
			}
			if r >= utf8.RuneSelf {
				ascii = false
			}
			continue
		}
		flush(i)
	}
	flush(len(text))
}

// lowerASCII lower-cases an ASCII word, without allocating when it is
// already lower case.
func lowerASCII(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(w)
		}
	}
	return w
}

// fold lower-cases w and removes its diacritics (the combining marks of
// its canonical decomposition).
func fold(w string) string {
	d := norm.NFD.String(strings.ToLower(w))
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if !unicode.Is(unicode.Mn, r) {
			b.WriteRune(r)
		}
	}
	return norm.NFC.String(b.String())
}

// queryTerms folds store.SearchTerms the way words folds a listing's text.
func queryTerms(terms []string) []string {
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		words(t, func(w string) { out = append(out, w) })
	}
	return out
}
