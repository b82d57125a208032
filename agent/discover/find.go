package discover

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/agentsite/agentsite/store"
)

// Find finds up to n agents (at most Limits.Found; n ≤ 0: Limits.Found)
// for a sentence, as a delegating agent's find_agents and the A2A
// concierge ask: all its words first (the catalogue ANDs them); when that
// finds none, its words one by one (trimmed of punctuation, each once, at
// most Limits.Words of at least MinWordRunes runes), merged in the order
// searched, each listing once. tag, when not "", narrows every search.
func (d *Discover) Find(ctx context.Context, text, tag string, n int) ([]store.Listing, error) {
	if n <= 0 || n > d.limits.Found {
		n = d.limits.Found
	}
	var tags []string
	if tag = strings.ToLower(strings.TrimSpace(tag)); tag != "" {
		tags = []string{tag}
	}
	text = strings.Join(strings.Fields(text), " ")
	page, err := d.Search(ctx, store.SearchQuery{Q: text, Tags: tags, Limit: n})
	if err != nil || len(page.Listings) > 0 {
		return page.Listings, err
	}
	words := strings.Fields(text)
	if len(words) < 2 {
		return nil, nil
	}
	var out []store.Listing
	seen := map[string]bool{}
	tried := 0
	for _, word := range words {
		if tried == d.limits.Words || len(out) == n {
			break
		}
		word = strings.ToLower(strings.Trim(word, ".,;:!?\"'()"))
		if utf8.RuneCountInString(word) < MinWordRunes || seen["word:"+word] {
			continue
		}
		seen["word:"+word] = true
		tried++
		page, err := d.Search(ctx, store.SearchQuery{Q: word, Tags: tags, Limit: n})
		if err != nil {
			return nil, err
		}
		for _, l := range page.Listings {
			if !seen[l.Record.ID] && len(out) < n {
				seen[l.Record.ID] = true
				out = append(out, l)
			}
		}
	}
	return out, nil
}
