package searchindex

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/agentsite/agentsite/store"
)

// A snapshot is the index on disk, so that a node restarted reads it and
// the changes since, not the whole change feed (at 1M listings the feed
// took 67-88 s to read and apply on the 2-core machine). The file:
//
//	header: magic (8 bytes), format version (u32), body length (u64),
//	        CRC-32C of the body (u32)
//	body:   the database's feed id, the last change number applied, the
//	        change numbers not seen yet below it (gaps), the listings
//	        (position, change number, text hash), the live words in word
//	        order (one byte run and their ends), the postings of more
//	        than one listing (a slice of keys or a roaring bitmap), each
//	        field's posting of each word (a ref), the filter bitmaps.
//
// Integers are little-endian. Every count is checked against the bytes
// left before anything is allocated for it, so a corrupt or foreign file
// is an error, never a crash or an allocation larger than the file.
const (
	snapshotMagic   = "agsindex"
	snapshotVersion = 1
	headerLen       = 8 + 4 + 8 + 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errSnapshot: the file is not a snapshot this binary can read.
var errSnapshot = errors.New("search index: bad snapshot")

// snapshotState is what a snapshot holds besides the index.
type snapshotState struct {
	feed  string
	after int64
	gaps  []int64
}

// writer writes the body, counting its bytes and its checksum.
type writer struct {
	w   *bufio.Writer
	crc hash.Hash32
	n   int64
	err error
	buf [8]byte
}

func (w *writer) bytes(b []byte) {
	if w.err != nil {
		return
	}
	w.crc.Write(b)
	w.n += int64(len(b))
	_, w.err = w.w.Write(b)
}

func (w *writer) u32(v uint32) {
	binary.LittleEndian.PutUint32(w.buf[:4], v)
	w.bytes(w.buf[:4])
}

func (w *writer) u64(v uint64) {
	binary.LittleEndian.PutUint64(w.buf[:8], v)
	w.bytes(w.buf[:8])
}

func (w *writer) str(s string) {
	w.u32(uint32(len(s)))
	w.bytes([]byte(s))
}

func (w *writer) bitmap(b *roaring.Bitmap, scratch *bytes.Buffer) {
	scratch.Reset()
	if _, err := b.WriteTo(scratch); err != nil && w.err == nil {
		w.err = err
	}
	w.u32(uint32(scratch.Len()))
	w.bytes(scratch.Bytes())
}

// writeSnapshot writes ix and st to path: a temporary file next to it,
// synced, then renamed over it, so that path is always a whole snapshot.
// It returns the file's size. Nothing may change ix meanwhile (the caller
// holds the Store's syncMu); searches may read it.
func writeSnapshot(path string, ix *index, st snapshotState) (int64, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, fmt.Errorf("search index: write snapshot: %w", err)
	}
	defer func() {
		if f != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(make([]byte, headerLen)); err != nil {
		return 0, fmt.Errorf("search index: write snapshot: %w", err)
	}
	w := &writer{w: bufio.NewWriterSize(f, 1<<20), crc: crc32.New(castagnoli)}
	ix.writeBody(w, st)
	if w.err == nil {
		w.err = w.w.Flush()
	}
	if w.err != nil {
		return 0, fmt.Errorf("search index: write snapshot: %w", w.err)
	}
	var h [headerLen]byte
	copy(h[:], snapshotMagic)
	binary.LittleEndian.PutUint32(h[8:], snapshotVersion)
	binary.LittleEndian.PutUint64(h[12:], uint64(w.n))
	binary.LittleEndian.PutUint32(h[20:], w.crc.Sum32())
	if _, err := f.WriteAt(h[:], 0); err != nil {
		return 0, fmt.Errorf("search index: write snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("search index: write snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return 0, fmt.Errorf("search index: write snapshot: %w", err)
	}
	f = nil
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("search index: write snapshot: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync() // the rename, durable; a failure leaves the old file at worst
		d.Close()
	}
	return headerLen + w.n, nil
}

// writeBody writes the snapshot's body. Words no posting holds any more
// are left out, and the others numbered again in word order, so that a
// loaded index's sorted list is its ids in order.
func (ix *index) writeBody(w *writer, st snapshotState) {
	w.str(st.feed)
	w.u64(uint64(st.after))
	w.u32(uint32(len(st.gaps)))
	for _, g := range st.gaps {
		w.u64(uint64(g))
	}
	w.u64(uint64(ix.docs.n))
	ix.docs.each(func(pos uint32, d doc) {
		w.u32(pos)
		w.u64(uint64(d.seq))
		w.u64(d.text)
	})
	// The live words in order, and the postings of more than one
	// listing, numbered in the order they are first met.
	live := make([]uint32, 0, len(ix.sorted))
	arena := 0
	for _, id := range ix.sorted { // apply leaves every word sorted
		if ix.post[title][id] != 0 || ix.post[head][id] != 0 || ix.post[all][id] != 0 {
			live = append(live, id)
			arena += len(ix.list.word(id))
		}
	}
	w.u32(uint32(len(live)))
	w.u64(uint64(arena))
	for _, id := range live {
		w.bytes([]byte(ix.list.word(id)))
	}
	end := uint32(0)
	for _, id := range live {
		end += uint32(len(ix.list.word(id)))
		w.u32(end)
	}
	number := map[ref]uint32{} // a posting's place in the file, from 1
	var order []ref
	for _, id := range live {
		for f := range nFields {
			if r := ix.post[f][id]; r != 0 && r&inline == 0 {
				if _, ok := number[r]; !ok {
					order = append(order, r)
					number[r] = uint32(len(order))
				}
			}
		}
	}
	var scratch bytes.Buffer
	w.u32(uint32(len(order)))
	for _, r := range order {
		p := ix.pl.at(r)
		if p.big != nil {
			w.bytes([]byte{1})
			w.bitmap(p.big, &scratch)
			continue
		}
		w.bytes([]byte{0})
		w.u32(uint32(len(p.small)))
		for _, k := range p.small {
			w.u32(k)
		}
	}
	for f := range nFields {
		for _, id := range live {
			r := ix.post[f][id]
			if r != 0 && r&inline == 0 {
				r = ref(number[r])
			}
			w.u32(uint32(r))
		}
	}
	for _, m := range ix.filterMaps() {
		names := make([]string, 0, len(*m))
		for name := range *m {
			names = append(names, name)
		}
		slices.Sort(names)
		w.u32(uint32(len(names)))
		for _, name := range names {
			w.str(name)
			w.bitmap((*m)[name], &scratch)
		}
	}
}

// filterMaps are the filter bitmaps, in the snapshot's order.
func (ix *index) filterMaps() []*map[string]*roaring.Bitmap {
	return []*map[string]*roaring.Bitmap{&ix.status, &ix.health, &ix.tags, &ix.owners}
}

// reader reads a body of known length.
type reader struct {
	r    *bufio.Reader
	left int64
	err  error
	buf  []byte
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{errSnapshot}, args...)...)
	}
}

// need tells whether n more bytes are there to read.
func (r *reader) need(n uint64) bool {
	if r.err != nil {
		return false
	}
	if n > uint64(r.left) {
		r.fail("%d bytes asked for, %d left", n, r.left)
		return false
	}
	return true
}

func (r *reader) bytes(n uint64) []byte {
	if !r.need(n) {
		return nil
	}
	if uint64(cap(r.buf)) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = err
		return nil
	}
	r.left -= int64(n)
	return b
}

// fresh reads n bytes into a slice of their own.
func (r *reader) fresh(n uint64) []byte {
	if !r.need(n) {
		return nil
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.r, b); err != nil {
		r.err = err
		return nil
	}
	r.left -= int64(n)
	return b
}

func (r *reader) u32() uint32 {
	if b := r.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (r *reader) str() string {
	n := r.u32()
	return string(r.bytes(uint64(n)))
}

// count reads a count of items of at least size bytes each.
func (r *reader) count(size uint64) uint64 {
	n := r.u32()
	if !r.need(uint64(n) * size) {
		return 0
	}
	return uint64(n)
}

func (r *reader) bitmap() *roaring.Bitmap {
	b := r.bytes(uint64(r.u32()))
	if b == nil {
		return nil
	}
	bm := roaring.New()
	if _, err := bm.ReadFrom(bytes.NewReader(b)); err != nil {
		r.fail("bitmap: %v", err)
		return nil
	}
	if err := bm.Validate(); err != nil {
		r.fail("bitmap: %v", err)
		return nil
	}
	return bm
}

// readSnapshot reads the snapshot at path into a new index. The body's
// checksum is checked before it is parsed.
func readSnapshot(path string) (ix *index, st snapshotState, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, st, err
	}
	var h [headerLen]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return nil, st, fmt.Errorf("%w: header: %v", errSnapshot, err)
	}
	if string(h[:8]) != snapshotMagic {
		return nil, st, fmt.Errorf("%w: not a snapshot", errSnapshot)
	}
	if v := binary.LittleEndian.Uint32(h[8:]); v != snapshotVersion {
		return nil, st, fmt.Errorf("%w: format version %d, this binary reads %d", errSnapshot, v, snapshotVersion)
	}
	size := binary.LittleEndian.Uint64(h[12:])
	if size != uint64(fi.Size()-headerLen) {
		return nil, st, fmt.Errorf("%w: body of %d bytes, the file holds %d", errSnapshot, size, fi.Size()-headerLen)
	}
	sum := crc32.New(castagnoli)
	if _, err := io.Copy(sum, bufio.NewReaderSize(f, 1<<20)); err != nil {
		return nil, st, err
	}
	if sum.Sum32() != binary.LittleEndian.Uint32(h[20:]) {
		return nil, st, fmt.Errorf("%w: checksum", errSnapshot)
	}
	if _, err := f.Seek(headerLen, io.SeekStart); err != nil {
		return nil, st, err
	}
	r := &reader{r: bufio.NewReaderSize(f, 1<<20), left: int64(size)}
	defer func() {
		if p := recover(); p != nil { // a bug of ours, or a library's on bytes it did not expect
			ix, err = nil, fmt.Errorf("%w: %v", errSnapshot, p)
		}
	}()
	ix, st = readBody(r)
	if r.err == nil && r.left != 0 {
		r.fail("%d bytes after the body", r.left)
	}
	if r.err != nil {
		return nil, snapshotState{}, r.err
	}
	return ix, st, nil
}

// readBody reads what writeBody wrote, checking it as it goes.
func readBody(r *reader) (*index, snapshotState) {
	var st snapshotState
	if n := r.u32(); n > 1024 {
		r.fail("feed id of %d bytes", n)
	} else {
		st.feed = string(r.bytes(uint64(n)))
	}
	st.after = int64(r.u64())
	if st.after < 0 {
		r.fail("last change number %d", st.after)
	}
	ng := r.count(8)
	if ng > maxGaps {
		r.fail("%d gaps", ng)
		ng = 0
	}
	for range ng {
		st.gaps = append(st.gaps, int64(r.u64()))
	}
	ix := newIndex()
	nd := r.u64()
	if !r.need(nd * 20) {
		return nil, st
	}
	prev := int64(0)
	pages, maxPages := 0, nd/64+256 // a page costs 64 KB: so many are not for so few listings
	for range nd {
		pos, seq, text := r.u32(), int64(r.u64()), r.u64()
		if int64(pos) <= prev || int64(pos) > maxPos || seq <= 0 || seq > st.after {
			r.fail("listing at %d (after %d) with change number %d", pos, prev, seq)
			return nil, st
		}
		if prev == 0 || pos>>docPageBits != uint32(prev)>>docPageBits {
			if pages++; uint64(pages) > maxPages {
				r.fail("%d listings spread over more than %d pages", nd, maxPages)
				return nil, st
			}
		}
		prev = int64(pos)
		ix.docs.set(pos, doc{seq: seq, text: text})
	}
	nw := r.count(4)
	arena := r.u64()
	if !r.need(arena + nw*4) {
		return nil, st
	}
	ix.list.bytes = r.fresh(arena)
	ix.list.ends = make([]uint32, nw)
	ix.sorted = make([]uint32, nw)
	prevWord := ""
	for i := range nw {
		end := r.u32()
		if (i > 0 && end <= ix.list.ends[i-1]) || end == 0 || uint64(end) > arena {
			r.fail("word %d ends at %d", i, end)
			return nil, st
		}
		ix.list.ends[i] = end
		ix.sorted[i] = uint32(i)
		if w := ix.list.word(uint32(i)); i > 0 && w <= prevWord {
			r.fail("word %d out of order", i)
			return nil, st
		} else {
			prevWord = w
		}
	}
	if nw > 0 && uint64(ix.list.ends[nw-1]) != arena {
		r.fail("words end at %d of %d bytes", ix.list.ends[nw-1], arena)
	}
	ix.unsortedFrom = int(nw)
	np := r.count(5)
	ix.pl.pl = make([]posting, 0, np)
	for range np {
		kind := r.bytes(1)
		if kind == nil {
			return nil, st
		}
		switch kind[0] {
		case 0:
			n := r.count(4)
			if n < 1 || n > smallMax {
				r.fail("small posting of %d", n)
				return nil, st
			}
			keys := make([]uint32, n)
			for i := range keys {
				keys[i] = r.u32()
			}
			if !slices.IsSorted(keys) {
				r.fail("small posting out of order")
			}
			ix.pl.pl = append(ix.pl.pl, posting{small: keys})
		case 1:
			b := r.bitmap()
			if b == nil {
				return nil, st
			}
			ix.pl.pl = append(ix.pl.pl, posting{big: b})
		default:
			r.fail("posting of kind %d", kind[0])
			return nil, st
		}
	}
	for f := range nFields {
		if !r.need(nw * 4) {
			return nil, st
		}
		ix.post[f] = make([]ref, nw)
		for id := range ix.post[f] {
			v := ref(r.u32())
			if v&inline == 0 && uint64(v) > np {
				r.fail("posting %d of %d", v, np)
				return nil, st
			}
			ix.post[f][id] = v
		}
	}
	for _, m := range ix.filterMaps() {
		n := r.count(8)
		for range n {
			name := r.str()
			b := r.bitmap()
			if b == nil {
				return nil, st
			}
			(*m)[name] = b
		}
	}
	if r.err != nil {
		return nil, st
	}
	for i, failing := range []bool{false, true} {
		ix.visible[i] = ix.filterOf(store.SearchQuery{}, failing)
	}
	return ix, st
}
