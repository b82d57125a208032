package searchindex

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for text, want := range map[string][]string{
		"Weather-Oracle v2":       {"weather", "oracle", "v2"},
		"Café ÉTÉ naïve":          {"cafe", "ete", "naive"},
		"Cafe\u0301 (decomposed)": {"cafe", "decomposed"},
		"  日本語 テキスト 123 ":         {"日本語", "テキスト", "123"},
		`["web-search","x"]`:      {"web", "search", "x"},
		"":                        nil,
	} {
		var got []string
		words(text, func(w string) { got = append(got, w) })
		if !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, want %q", text, got, want)
		}
	}
	if got := queryTerms([]string{"café", "ete"}); !slices.Equal(got, []string{"cafe", "ete"}) {
		t.Errorf("queryTerms = %q", got)
	}
}
