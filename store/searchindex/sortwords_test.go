package searchindex

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSortWordsMergesNewWords: words added in batches large and small
// (merged into the sorted list, or inserted one by one) are all found,
// and the list stays in order.
func TestSortWordsMergesNewWords(t *testing.T) {
	ix := newIndex()
	var want []string
	for round, n := range []int{500, 3, 200, 64, 65, 1000} {
		for i := range n {
			w := fmt.Sprintf("w%d-%d", (i*7919+round)%997, round*10_000+i)
			ix.wordID(w)
			want = append(want, w)
		}
		ix.sortWords()
		if !slices.IsSortedFunc(ix.sorted, func(a, b uint32) int { return strings.Compare(ix.list[a], ix.list[b]) }) {
			t.Fatalf("round %d: the word list is out of order", round)
		}
		if len(ix.sorted) != len(ix.list) {
			t.Fatalf("round %d: %d words sorted of %d", round, len(ix.sorted), len(ix.list))
		}
		for _, w := range want {
			if id, ok := ix.lookup(w); !ok || ix.list[id] != w {
				t.Fatalf("round %d: %q not found (%d, %v)", round, w, id, ok)
			}
		}
	}
}
