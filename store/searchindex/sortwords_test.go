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
		if !slices.IsSortedFunc(ix.sorted, func(a, b uint32) int { return strings.Compare(ix.list.word(a), ix.list.word(b)) }) {
			t.Fatalf("round %d: the word list is out of order", round)
		}
		if len(ix.sorted) != ix.list.len() {
			t.Fatalf("round %d: %d words sorted of %d", round, len(ix.sorted), ix.list.len())
		}
		for _, w := range want {
			if id, ok := ix.lookup(w); !ok || ix.list.word(id) != w {
				t.Fatalf("round %d: %q not found (%d, %v)", round, w, id, ok)
			}
		}
	}
}

// TestCommonWordsSkipTheBinarySearch: once a word is in the sorted list,
// filing it again (listing after listing) finds it without a binary
// search over every word; new words and the words added since the last
// sort are still found, and ids do not change.
func TestCommonWordsSkipTheBinarySearch(t *testing.T) {
	ix := newIndex()
	common := []string{"weather", "forecast", "travel", "code"}
	ids := map[string]uint32{}
	for i, w := range common {
		ids[w] = ix.wordID(w)
		ix.wordID(fmt.Sprintf("unique%d", i))
	}
	ix.sortWords()
	before := ix.searches
	for i := range 1000 {
		for _, w := range common {
			if id := ix.wordID(w); id != ids[w] {
				t.Fatalf("listing %d: %q has id %d, was %d", i, w, id, ids[w])
			}
		}
	}
	if n := ix.searches - before; n > len(common) {
		t.Errorf("%d binary searches to file 4 known words 1000 times, want at most %d (one each)", n, len(common))
	}
	fresh := ix.wordID("fresh")
	if id, ok := ix.lookup("fresh"); !ok || id != fresh || ix.list.word(fresh) != "fresh" {
		t.Errorf("a new word: id %d, lookup %d %v", fresh, id, ok)
	}
	ix.sortWords()
	if id := ix.wordID("fresh"); id != fresh {
		t.Errorf("fresh after the sort: id %d, want %d", id, fresh)
	}
}
