package main

import (
	"slices"
	"strings"
	"testing"
)

// TestDistinctQueries: the distinct mix is as many queries as asked, one
// or two words each, no two the same set of words, and deterministic.
func TestDistinctQueries(t *testing.T) {
	qs := distinctQueries(5000, 10_000)
	if len(qs) != 5000 {
		t.Fatalf("got %d queries, want 5000", len(qs))
	}
	seen := map[string]bool{}
	singles := 0
	for _, q := range qs {
		words := strings.Fields(q)
		if len(words) < 1 || len(words) > 2 {
			t.Fatalf("query %q is not one or two words", q)
		}
		if len(words) == 1 {
			singles++
		}
		slices.Sort(words)
		key := strings.Join(words, " ")
		if seen[key] {
			t.Fatalf("query %q sent twice", q)
		}
		seen[key] = true
	}
	if singles < 100 || singles > 2500 {
		t.Errorf("%d one-word queries of 5000", singles)
	}
	if again := distinctQueries(5000, 10_000); !slices.Equal(again, qs) {
		t.Error("the mix differs between two runs")
	}
}
