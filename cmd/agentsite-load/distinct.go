package main

import (
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unicode"
)

// stopWords are left out of the distinct-query vocabulary: words nobody
// types into a search box on their own.
var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "any": true, "you": true, "your": true,
	"its": true, "that": true, "this": true, "from": true, "into": true, "are": true, "not": true,
	"all": true, "has": true, "what": true, "can": true, "also": true, "while": true, "when": true,
	"them": true, "than": true, "more": true, "most": true, "one": true, "use": true, "good": true,
	"does": true, "agent": true,
}

// recordWords are the searchable words of a record as a search box user
// would type them: lower case, letters only, three letters or more, no stop
// words, each once.
func recordWords(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) })
	var out []string
	for _, f := range fields {
		if len(f) < 3 || stopWords[f] || slices.Contains(out, f) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// distinctQueries makes n distinct one- and two-word queries from the
// vocabulary of the seeded catalogue of listings listings (the same
// deterministic records seed stores): every word of the catalogue once,
// in random order, among two-word queries whose words occur together in
// one listing (so most queries match something, as a search box's do).
// Two queries are never the same set of words, so none can be answered
// from another's cache entry.
func distinctQueries(n, listings int) []string {
	r := rand.New(rand.NewPCG(dataSeed, 7))
	at := time.Unix(0, 0)
	text := func(i int) string {
		rec := newRecord(rand.New(rand.NewPCG(dataSeed, uint64(i))), i, at)
		var b strings.Builder
		b.WriteString(rec.Name + " " + rec.DisplayName + " " + rec.Description + " " + strings.Join(rec.Tags, " "))
		for _, s := range rec.Skills {
			b.WriteString(" " + s.Name + " " + s.Description)
		}
		return b.String()
	}
	// One-word queries: the catalogue's vocabulary, from a sample of it.
	var singles []string
	seen := map[string]bool{}
	for i := range min(listings, 5000) {
		for _, w := range recordWords(text(i)) {
			if !seen[w] {
				seen[w] = true
				singles = append(singles, w)
			}
		}
	}
	r.Shuffle(len(singles), func(i, j int) { singles[i], singles[j] = singles[j], singles[i] })

	out := make([]string, 0, n)
	used := map[string]bool{}
	for tries := 0; len(out) < n && tries < 20*n; tries++ {
		if len(singles) > 0 && r.IntN(4) == 0 {
			out = append(out, singles[0])
			used[singles[0]] = true
			singles = singles[1:]
			continue
		}
		words := recordWords(text(r.IntN(listings)))
		if len(words) < 2 {
			continue
		}
		a, b := words[r.IntN(len(words))], words[r.IntN(len(words))]
		if a == b {
			continue
		}
		key := min(a, b) + " " + max(a, b)
		if used[key] {
			continue
		}
		used[key] = true
		out = append(out, a+" "+b)
	}
	return out
}
