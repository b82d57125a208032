package searchindex

import (
	"slices"
	"unsafe"

	"github.com/RoaringBitmap/roaring/v2"
)

// doc is what the index remembers of one listing besides its bits: its
// change number (to check a page read from the engine against it; 0: no
// listing) and a hash of its text (a change that leaves the text alone,
// such as a status, leaves its words alone). 16 bytes: the index holds no
// copy of a listing's text or filters, only the bitmaps.
type doc struct {
	seq  int64
	text uint64
}

// docPageBits: docs are kept in pages of 4,096 positions, allocated when
// a listing first lands in one. Positions are first-seen order, dense in
// practice, so a page costs 16 bytes a listing; a map of them cost ~45
// bytes a listing (45 MB of the index at 1M listings, measured).
const docPageBits = 12

type docPage [1 << docPageBits]doc

// docTable is the docs by position.
type docTable struct {
	pages []*docPage
	n     int // listings held
}

func (t *docTable) get(pos uint32) doc {
	i := pos >> docPageBits
	if int(i) >= len(t.pages) || t.pages[i] == nil {
		return doc{}
	}
	return t.pages[i][pos&(1<<docPageBits-1)]
}

// set stores d at pos (d.seq 0: no listing there).
func (t *docTable) set(pos uint32, d doc) {
	i := int(pos >> docPageBits)
	if i >= len(t.pages) {
		if d.seq == 0 {
			return
		}
		t.pages = slices.Grow(t.pages, i+1-len(t.pages))[:i+1]
	}
	p := t.pages[i]
	if p == nil {
		if d.seq == 0 {
			return
		}
		p = new(docPage)
		t.pages[i] = p
	}
	at := &p[pos&(1<<docPageBits-1)]
	switch {
	case at.seq == 0 && d.seq != 0:
		t.n++
	case at.seq != 0 && d.seq == 0:
		t.n--
	}
	*at = d
}

// each calls fn with every listing held, in position order.
func (t *docTable) each(fn func(pos uint32, d doc)) {
	for i, p := range t.pages {
		if p == nil {
			continue
		}
		for j := range p {
			if p[j].seq != 0 {
				fn(uint32(i)<<docPageBits|uint32(j), p[j])
			}
		}
	}
}

// wordArena holds the index's words end to end: a word is a slice of
// one byte array, not a string of its own (at 1M listings most of ~1M
// words are a listing's own name or number, and a string header and an
// allocation each was ~30 MB).
type wordArena struct {
	bytes []byte
	ends  []uint32 // ends[id] is where word id ends; it starts where id-1 ends
}

func (a *wordArena) len() int { return len(a.ends) }

// word is word id. The arena is only appended to, so the string stays
// valid (and unchanged) when the arena grows.
func (a *wordArena) word(id uint32) string {
	start := uint32(0)
	if id > 0 {
		start = a.ends[id-1]
	}
	end := a.ends[id]
	if start == end {
		return ""
	}
	return unsafe.String(&a.bytes[start], end-start)
}

func (a *wordArena) add(w string) uint32 {
	a.bytes = append(a.bytes, w...)
	a.ends = append(a.ends, uint32(len(a.bytes)))
	return uint32(len(a.ends) - 1)
}

// ref is a posting: the set of listings of one word in one field. 0 is
// the empty set; with inline set, the one listing at the position in the
// other bits (most words of a big catalogue are in one listing, and an
// allocation each was most of the index's memory); otherwise 1 + the
// posting's place in index.pl.
type ref uint32

const inline ref = 1 << 31

// inlineRef is the posting of the one listing at key k, if its position
// fits.
func inlineRef(k uint32) (ref, bool) {
	pos := posOf(k)
	if pos >= int64(inline) {
		return 0, false
	}
	return inline | ref(pos), true
}

// one is the key of an inline posting.
func (r ref) one() uint32 { return key(int64(r &^ inline)) }

// posting is a posting of more than one listing (or of one whose
// position does not fit inline): a sorted slice of keys while it is
// small, a bitmap beyond (a roaring bitmap of a few keys spread over a
// big catalogue costs ~50 bytes a container).
type posting struct {
	small []uint32
	big   *roaring.Bitmap
}

// smallMax is the largest posting kept as a slice.
const smallMax = 24

func (p *posting) add(k uint32) {
	if p.big != nil {
		p.big.Add(k)
		return
	}
	i, found := slices.BinarySearch(p.small, k)
	if found {
		return
	}
	p.small = slices.Insert(p.small, i, k)
	if len(p.small) > smallMax {
		p.big = roaring.BitmapOf(p.small...)
		p.small = nil
	}
}

// without removes the keys of gone.
func (p *posting) without(gone *roaring.Bitmap) {
	if p.big != nil {
		p.big.AndNot(gone)
		return
	}
	p.small = slices.DeleteFunc(p.small, gone.Contains)
}

func (p *posting) len() int {
	if p.big != nil {
		return int(p.big.GetCardinality())
	}
	return len(p.small)
}

// postings is the table of the postings refs point to, with the places
// freed for reuse.
type postings struct {
	pl   []posting
	free []uint32
	// pending holds the keys added to bitmap postings during an apply,
	// merged in at its end (flush): a load files listings newest last,
	// whose keys are a bitmap's smallest, and adding them one by one
	// moved every key of an array container each time.
	pending map[ref][]uint32
}

// flush merges the pending keys into their bitmaps.
func (ps *postings) flush() {
	for r, keys := range ps.pending {
		ps.flushOne(r, keys)
	}
	clear(ps.pending)
}

func (ps *postings) flushOne(r ref, keys []uint32) {
	if len(keys) == 0 {
		return
	}
	slices.Sort(keys)
	ps.at(r).big.Or(roaring.BitmapOf(keys...))
	delete(ps.pending, r)
}

func (ps *postings) at(r ref) *posting { return &ps.pl[r-1] }

func (ps *postings) alloc(p posting) ref {
	if n := len(ps.free); n > 0 {
		i := ps.free[n-1]
		ps.free = ps.free[:n-1]
		ps.pl[i] = p
		return ref(i + 1)
	}
	ps.pl = append(ps.pl, p)
	return ref(len(ps.pl))
}

func (ps *postings) release(r ref) {
	if r != 0 && r&inline == 0 {
		ps.pl[r-1] = posting{}
		ps.free = append(ps.free, uint32(r-1))
	}
}

func (ps *postings) len(r ref) int {
	switch {
	case r == 0:
		return 0
	case r&inline != 0:
		return 1
	}
	return ps.at(r).len()
}

// add adds key k to r's set, which only r's holders see; it returns
// the ref of the set with k (r itself unless r was empty or inline).
func (ps *postings) add(r ref, k uint32) ref {
	switch {
	case r == 0:
		if in, ok := inlineRef(k); ok {
			return in
		}
		return ps.alloc(posting{small: []uint32{k}})
	case r&inline != 0:
		o := r.one()
		if o == k {
			return r
		}
		return ps.alloc(posting{small: []uint32{min(o, k), max(o, k)}})
	}
	if p := ps.at(r); p.big != nil {
		if ps.pending == nil {
			ps.pending = map[ref][]uint32{}
		}
		ps.pending[r] = append(ps.pending[r], k)
	} else {
		p.add(k)
	}
	return r
}

// clone is a copy of r's set of its own.
func (ps *postings) clone(r ref) ref {
	if r == 0 || r&inline != 0 {
		return r
	}
	ps.flushOne(r, ps.pending[r])
	p := ps.at(r)
	if p.big != nil {
		return ps.alloc(posting{big: p.big.Clone()})
	}
	return ps.alloc(posting{small: slices.Clone(p.small)})
}

// without removes the keys of gone from r's set, and returns its ref
// afterwards: 0 when empty (r's place freed), inline when one is left.
func (ps *postings) without(r ref, gone *roaring.Bitmap) ref {
	switch {
	case r == 0:
		return 0
	case r&inline != 0:
		if gone.Contains(r.one()) {
			return 0
		}
		return r
	}
	p := ps.at(r)
	p.without(gone)
	switch n := p.len(); {
	case n == 0:
		ps.release(r)
		return 0
	case n == 1 && p.small != nil:
		if in, ok := inlineRef(p.small[0]); ok {
			ps.release(r)
			return in
		}
	}
	return r
}

// keys appends r's keys to small, or returns its bitmap.
func (ps *postings) keys(r ref, small []uint32) ([]uint32, *roaring.Bitmap) {
	switch {
	case r == 0:
		return small, nil
	case r&inline != 0:
		return append(small, r.one()), nil
	}
	p := ps.at(r)
	if p.big != nil {
		return small, p.big
	}
	return append(small, p.small...), nil
}
