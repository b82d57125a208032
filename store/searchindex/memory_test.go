package searchindex

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentsite/agentsite/store"
)

// ownWords are n listings from pos, each with words of its own (a name,
// a number: most of a big catalogue's words) and a few shared ones.
func ownWords(pos, n int) []store.IndexDoc {
	docs := make([]store.IndexDoc, n)
	for i := range docs {
		p := int64(pos + i)
		docs[i] = store.IndexDoc{
			Pos: p, ChangeSeq: p, Status: store.StatusOnline, Health: "unknown",
			Name:        fmt.Sprintf("agent%d", p),
			Description: fmt.Sprintf("weather forecast code%d ref%d unique%dx", p, p, p),
		}
	}
	return docs
}

// TestOwnWordsCostNoAllocationEach: a word of one listing takes no
// allocation of its own (its posting is held in the word's slot, its
// text in the index's one byte run, its listing in a page of listings):
// at 1M listings ~1M such words, at ~3 allocations each, were ~90 MB of
// the index. Counted in allocations, not bytes: deterministic.
func TestOwnWordsCostNoAllocationEach(t *testing.T) {
	ix := newIndex()
	ix.apply(ownWords(1, 5000)) // the shared words, the maps' room
	docs := ownWords(5001, 5000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	ix.apply(docs)
	runtime.ReadMemStats(&after)
	words := 5000 * 4 // agentN, codeN, refN, uniqueNx
	perWord := float64(after.Mallocs-before.Mallocs) / float64(words)
	t.Logf("%.2f allocations per word of one listing", perWord)
	if perWord > 0.5 {
		t.Errorf("%.2f allocations per word of one listing, want at most 0.5", perWord)
	}
}

// TestSnapshotCorruptBodies: a snapshot whose body was changed (and its
// checksum made again, so that the parser sees it) is read as an error
// or as an index, never a crash, and never allocates more than its size.
func TestSnapshotCorruptBodies(t *testing.T) {
	ix := newIndex()
	ix.apply(ownWords(1, 200))
	var docs []store.IndexDoc
	for i := range 100 { // bitmaps and small postings too
		docs = append(docs, store.IndexDoc{Pos: int64(1000 + i), ChangeSeq: int64(1000 + i), Status: store.StatusStale,
			Health: "unknown", Owner: "o", Tags: []string{"t"}, Name: "common", Description: fmt.Sprintf("few%d", i%4)})
	}
	ix.apply(docs)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.snap")
	if _, err := writeSnapshot(good, ix, snapshotState{feed: "f", after: 2000, gaps: []int64{5, 7}}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, st, err := readSnapshot(good); err != nil || st.after != 2000 || len(st.gaps) != 2 {
		t.Fatalf("the good snapshot: %+v, %v", st, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	bad := filepath.Join(dir, "bad.snap")
	failed := 0
	for i := range 500 {
		b := bytes.Clone(data)
		for range 1 + rng.IntN(4) {
			j := headerLen + rng.IntN(len(b)-headerLen)
			if rng.IntN(2) == 0 {
				b[j] = byte(rng.Uint32())
			} else {
				b[j] = 0xff
			}
		}
		if i%7 == 0 {
			b = b[:headerLen+rng.IntN(len(b)-headerLen)]
			binary.LittleEndian.PutUint64(b[12:], uint64(len(b)-headerLen))
		}
		binary.LittleEndian.PutUint32(b[20:], crc32.Checksum(b[headerLen:], castagnoli))
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, _, err := readSnapshot(bad); err != nil {
			failed++
		}
		runtime.ReadMemStats(&after)
		// The pages of listings: at most 8 MB of page pointers (positions
		// up to 2^32) and 64 KB a page, at most 256 pages for so few.
		if n := after.TotalAlloc - before.TotalAlloc; n > 8*uint64(len(data))+(8<<20)+256*(64<<10) {
			t.Fatalf("mutation %d: %d bytes allocated to read a file of %d", i, n, len(b))
		}
	}
	t.Logf("%d of 500 changed bodies refused", failed)
}
