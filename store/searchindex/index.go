// Package searchindex is the in-process search index of the listings: a
// store.Catalogue's text searches answered from memory, the page's rows
// then read by position from the engine. It keeps the engines' meaning of
// a search exactly (store/storetest is its contract too): the words of a
// query prefix-matched and ANDed; relevance tiers (every word in the name
// or display name; in those or the tags; anywhere), online listings first
// within a tier, then newest first; failing agents last; the same filters
// and keyset cursors (store.StatusPasses has the whole order).
//
// Why: on the 2-core machine neither engine's full-text search got below
// ~1 ms of CPU per distinct query (SQLite's FTS5 expands each prefix over
// its whole doclist; Postgres scans GIN bitmaps over wide heap rows), which
// capped a portal at ~800 searches/s at 10k listings and ~150-460 at 100k
// (BENCHMARKS.md). Here a query is a few operations on compressed bitmaps
// of at most a few hundred thousand positions, and one primary-key read
// of the page's rows.
//
// The index follows the engine's change feed (store.ChangeFeed), not the
// writes it sees: every writer of the database (this process, another
// replica on the same Postgres, an import into a stopped node) gives the
// rows it changes a new change number, and the index reads the rows past
// the last number it applied. A search catches up first when this process
// wrote since the last catch-up (so a node finds what it just wrote), and
// otherwise at most once a second.
//
// A node keeps the index on disk between runs (Store.SnapshotPath,
// snapshot.go): a restart reads the snapshot and the changes since, not
// the whole feed (at 1M listings on the loaded 2-core machine: 1.3 s
// instead of 70-220 s). Memory: a word of one listing (most words of a
// big catalogue) holds its listing in its slot, its text in one byte run
// shared by every word, and listings are kept in pages by position; at
// 1M listings the index was ~200 MB and is 112 MB, 62 MB of it the
// bitmaps of the common words.
//
// Bitmaps are github.com/RoaringBitmap/roaring (the library bleve's
// postings use). bleve itself was considered and not used: its search
// collects and sorts every hit of a query by a stored field, where a tier
// here stops after a page, and its in-memory index held several times the
// memory for the same listings.
package searchindex

import (
	"hash/fnv"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// field is a part of a listing's text, each a superset of the one before:
// the title (name and display name), the head (and the tags), all (and
// the description and skills). They are the relevance tiers.
type field int

const (
	title field = iota
	head
	all
	nFields
)

// key is a listing's place in the bitmaps: its position complemented, so
// that ascending keys are newest first (an iterator walks a tier in page
// order and advances to a cursor).
func key(pos int64) uint32 { return ^uint32(pos) }

// posOf is the position of a key.
func posOf(k uint32) int64 { return int64(^k) }

// maxPos is the largest position the index can hold (keys are 32 bits).
const maxPos = 1<<32 - 2

// index is the bitmaps of the listings. Its methods are called with the
// Store's lock held (read for queries, write for changes).
type index struct {
	docs docTable
	// words: a word's id is its place in list; sorted holds the ids in
	// word order (for prefix ranges and look-ups), unsortedFrom the ids
	// appended since it was last sorted, and unsorted those by word. No
	// map of every word: at 100k listings it was 5 MB of the index's 30.
	unsorted     map[string]uint32
	list         wordArena
	sorted       []uint32
	unsortedFrom int
	// lazySort: apply leaves up to lazyWords new words unsorted (a load,
	// which no search reads until it ends: merging each batch's new
	// words into ~1M sorted ones was O(words) a batch).
	lazySort bool
	// hot holds words found in sorted lately (at most hotWords; emptied
	// when full), so that common words skip the binary search; searches
	// counts the binary searches (tests).
	hot      map[string]uint32
	searches int
	// bits is file's scratch map.
	bits map[uint32]byte
	// post[f][id] is the set of listings whose field f holds word id;
	// pl holds the sets of more than one.
	post [nFields][]ref
	pl   postings
	// Filters: status, health state, tag, owner → listings.
	status, health, tags, owners map[string]*roaring.Bitmap
	// visible is the filter of most searches (the default statuses and
	// nothing else) for each health pass (0 not failing, 1 failing), kept
	// by apply rather than made again by every search.
	visible [2]*roaring.Bitmap
}

func newIndex() *index {
	return &index{
		unsorted: map[string]uint32{}, hot: map[string]uint32{},
		status: map[string]*roaring.Bitmap{}, health: map[string]*roaring.Bitmap{},
		tags: map[string]*roaring.Bitmap{}, owners: map[string]*roaring.Bitmap{},
	}
}

// lazyWords bounds the words a load leaves unsorted.
const lazyWords = 1 << 16

// hotWords bounds index.hot.
const hotWords = 1 << 16

// wordID returns the id of w, adding it if new. A sorted word it finds is
// remembered in hot: a catalogue's common words (a domain, a verb) come
// back in most listings, and a binary search over every word (1M at 1M
// listings) for each of a listing's ~50 words was a fifth of the index's
// load.
func (ix *index) wordID(w string) uint32 {
	if id, ok := ix.hot[w]; ok {
		return id
	}
	if id, ok := ix.lookup(w); ok {
		if int(id) < ix.unsortedFrom {
			if len(ix.hot) >= hotWords {
				clear(ix.hot)
			}
			ix.hot[strings.Clone(w)] = id
		}
		return id
	}
	id := ix.list.add(w)
	ix.unsorted[ix.list.word(id)] = id
	for f := range ix.post {
		ix.post[f] = append(ix.post[f], 0)
	}
	return id
}

// lookup returns the id of w, if it is a word of the index.
func (ix *index) lookup(w string) (uint32, bool) {
	if id, ok := ix.unsorted[w]; ok {
		return id, true
	}
	ix.searches++
	i, found := slices.BinarySearchFunc(ix.sorted, w, func(id uint32, w string) int { return strings.Compare(ix.list.word(id), w) })
	if !found {
		return 0, false
	}
	return ix.sorted[i], true
}

// sortWords brings sorted up to date: a few new words are inserted in
// place, many are sorted alone and merged in, O(words) (sorting the whole
// list again on every catch-up was most of a mirror's index upkeep at
// 100k listings: each listing brings words of its own).
func (ix *index) sortWords() {
	added := ix.list.len() - ix.unsortedFrom
	if added == 0 {
		return
	}
	cmp := func(a, b uint32) int { return strings.Compare(ix.list.word(a), ix.list.word(b)) }
	if added > 64 {
		fresh := make([]uint32, 0, added)
		for id := ix.unsortedFrom; id < ix.list.len(); id++ {
			fresh = append(fresh, uint32(id))
		}
		slices.SortFunc(fresh, cmp)
		merged := make([]uint32, 0, len(ix.sorted)+len(fresh))
		old := ix.sorted
		for len(old) > 0 && len(fresh) > 0 {
			if cmp(old[0], fresh[0]) <= 0 {
				merged, old = append(merged, old[0]), old[1:]
			} else {
				merged, fresh = append(merged, fresh[0]), fresh[1:]
			}
		}
		ix.sorted = append(append(merged, old...), fresh...)
	} else {
		for id := ix.unsortedFrom; id < ix.list.len(); id++ {
			i, _ := slices.BinarySearchFunc(ix.sorted, uint32(id), cmp)
			ix.sorted = slices.Insert(ix.sorted, i, uint32(id))
		}
	}
	ix.unsortedFrom = ix.list.len()
	if len(ix.unsorted) > 256 {
		ix.unsorted = map[string]uint32{} // a map keeps the room it grew to
	} else {
		clear(ix.unsorted)
	}
}

func add(m map[string]*roaring.Bitmap, k string, x uint32) {
	b := m[k]
	if b == nil {
		b = roaring.New()
		m[k] = b
	}
	b.Add(x)
}

// textHash is a hash of the text a listing is searched by.
func textHash(d *store.IndexDoc) uint64 {
	h := fnv.New64a()
	for _, s := range [...]string{d.Name, d.DisplayName, d.Description, d.SkillsText} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	for _, t := range d.Tags {
		h.Write([]byte(t))
		h.Write([]byte{1})
	}
	return h.Sum64()
}

// apply makes the index hold docs (a tombstone: not hold it), each newer
// than what it holds of the listing (older ones are skipped). A listing
// that changed leaves every filter bitmap, and every word's posting if its
// text changed, in one pass over them for the whole batch, then is added
// again.
func (ix *index) apply(docs []store.IndexDoc) {
	last := make(map[uint32]int, len(docs)) // a listing twice in docs: its newest
	for i := range docs {
		d := &docs[i]
		if d.Pos <= 0 || d.Pos > maxPos {
			continue
		}
		k := key(d.Pos)
		if j, ok := last[k]; ok && docs[j].ChangeSeq >= d.ChangeSeq {
			continue
		}
		last[k] = i
	}
	refiled, retexted := roaring.New(), roaring.New()
	type change struct {
		d       *store.IndexDoc
		k       uint32
		newText bool
	}
	var changes []change
	for k, i := range last {
		d := &docs[i]
		pos := uint32(d.Pos)
		old := ix.docs.get(pos)
		held := old.seq != 0
		if held && old.seq >= d.ChangeSeq {
			continue // already applied (a gap asked again, a load's overlap)
		}
		h := textHash(d)
		if held {
			refiled.Add(k)
			if d.Tombstone || old.text != h {
				retexted.Add(k)
			}
		}
		if d.Tombstone {
			ix.docs.set(pos, doc{})
			continue
		}
		ix.docs.set(pos, doc{seq: d.ChangeSeq, text: h})
		changes = append(changes, change{d, k, !held || old.text != h})
	}
	if !refiled.IsEmpty() {
		for _, m := range []map[string]*roaring.Bitmap{ix.status, ix.health, ix.tags, ix.owners} {
			for v, b := range m {
				if b.AndNot(refiled); b.IsEmpty() {
					delete(m, v)
				}
			}
		}
	}
	if !retexted.IsEmpty() {
		for id := range ix.list.len() {
			// A shared posting once: the fields after it that held the
			// same ref get what it became.
			var was, now [nFields]ref
			for f := range nFields {
				r := ix.post[f][id]
				if r == 0 {
					continue
				}
				nr, done := r, false
				for g := range f {
					if was[g] == r {
						nr, done = now[g], true
						break
					}
				}
				if !done {
					nr = ix.pl.without(r, retexted)
				}
				was[f], now[f] = r, nr
				ix.post[f][id] = nr
			}
		}
	}
	for _, c := range changes {
		ix.file(c.d, c.k, c.newText)
	}
	ix.pl.flush()
	if !ix.lazySort || ix.list.len()-ix.unsortedFrom > lazyWords {
		ix.sortWords()
	}
	for i, failing := range []bool{false, true} {
		ix.visible[i] = ix.filterOf(store.SearchQuery{}, failing)
	}
}

// file adds the listing d at key k to the filter bitmaps and, with text,
// to the postings of its words.
func (ix *index) file(d *store.IndexDoc, k uint32, text bool) {
	add(ix.status, d.Status, k)
	add(ix.health, d.Health, k)
	add(ix.owners, d.Owner, k)
	for _, t := range d.Tags {
		add(ix.tags, t, k)
	}
	if !text {
		return
	}
	// Each word's fields: bit 0 title, 1 head, 2 all (one map for every
	// listing filed, emptied each time: a map each was 7 % of a load).
	if ix.bits == nil {
		ix.bits = map[uint32]byte{}
	}
	bits := ix.bits
	clear(bits)
	mark := func(text string, b byte) {
		words(text, func(w string) { bits[ix.wordID(w)] |= b })
	}
	mark(d.Name, 7)
	mark(d.DisplayName, 7)
	for _, t := range d.Tags {
		mark(t, 6)
	}
	mark(d.Description, 4)
	mark(d.SkillsText, 4)
	for id, b := range bits {
		ix.post3(id, b, k)
	}
}

// post3 adds key k to the postings of word id in the fields of bits. A
// word in the same listings in several fields (a name's word is in the
// title, the head and all) has one posting the fields share, made on
// write: most words of a catalogue are such (a listing's own name or
// number), and three postings cost three times the memory.
func (ix *index) post3(id uint32, bits byte, k uint32) {
	var shared ref // the posting of the fields of bits, when one
	for f := range nFields {
		if bits&(1<<f) == 0 {
			continue
		}
		r := ix.post[f][id]
		switch {
		case r == 0 && shared != 0:
			// Empty here, and the fields before got k from shared: the
			// sets are equal if shared held only k.
			if ix.pl.len(shared) == 1 {
				ix.post[f][id] = shared
				continue
			}
		case r == 0:
		case r == shared:
			continue // k already added through another field
		case r&inline == 0 && ix.sharedOutside(id, r, bits):
			// Another field, which k is not joining, holds r too.
			r = ix.pl.clone(r)
		}
		r = ix.pl.add(r, k)
		ix.post[f][id] = r
		shared = r
	}
}

// sharedOutside tells whether a field not in bits holds r for word id.
func (ix *index) sharedOutside(id uint32, r ref, bits byte) bool {
	for g := range nFields {
		if bits&(1<<g) == 0 && ix.post[g][id] == r {
			return true
		}
	}
	return false
}

// prefix is the set of listings whose field f holds a word starting with
// p. owned: the set was made for this call (the union of several words'
// sets) and the caller may change it; otherwise it is the index's own.
func (ix *index) prefix(f field, p string) (set *roaring.Bitmap, owned bool) {
	lo, _ := slices.BinarySearchFunc(ix.sorted, p, func(id uint32, p string) int { return strings.Compare(ix.list.word(id), p) })
	var (
		bs    []*roaring.Bitmap
		small []uint32
	)
	for _, id := range ix.sorted[lo:] {
		if !strings.HasPrefix(ix.list.word(id), p) {
			break
		}
		var b *roaring.Bitmap
		if small, b = ix.pl.keys(ix.post[f][id], small); b != nil {
			bs = append(bs, b)
		}
	}
	if len(bs) == 1 && len(small) == 0 {
		return bs[0], false
	}
	out := roaring.FastOr(bs...)
	out.AddMany(small)
	return out, true
}

// text is the set of listings whose field f holds every term (each a
// prefix of one of its words); owned as prefix says. A set made here is
// intersected in place: a new set for each term's intersection was the
// largest part of what a text search allocated (BENCHMARKS.md "Memory at
// 100k listings", stop 40).
func (ix *index) text(f field, terms []string) (out *roaring.Bitmap, owned bool) {
	for _, t := range terms {
		b, bOwned := ix.prefix(f, t)
		switch {
		case out == nil:
			out, owned = b, bOwned
		case owned:
			out.And(b)
		case bOwned:
			b.And(out)
			out, owned = b, true
		default:
			out, owned = roaring.And(out, b), true
		}
		if out.IsEmpty() {
			break
		}
	}
	return out, owned
}

// and is set ∩ x: set itself, changed, when owned (the caller's to
// change), a new set otherwise.
func and(set *roaring.Bitmap, owned bool, x *roaring.Bitmap) *roaring.Bitmap {
	if owned {
		set.And(x)
		return set
	}
	return roaring.And(set, x)
}

// union of the bitmaps of m under keys (deduplicated); nil keys: nil.
func union(m map[string]*roaring.Bitmap, keys []string) *roaring.Bitmap {
	var bs []*roaring.Bitmap
	for _, k := range keys { // a key twice ORs its set twice: no harm
		if b := m[k]; b != nil {
			bs = append(bs, b)
		}
	}
	return roaring.FastOr(bs...)
}

// defaultStatuses tells whether statuses asks for what a search without
// statuses does: online and stale, each any number of times.
func defaultStatuses(statuses []string) bool {
	return len(statuses) == 0 || slices.Contains(statuses, store.StatusOnline) && slices.Contains(statuses, store.StatusStale) &&
		!slices.ContainsFunc(statuses, func(s string) bool { return s != store.StatusOnline && s != store.StatusStale })
}

// filter is the set of listings q's filters (statuses, health, tags,
// owner; not its text) allow in one health pass, failing or not. The
// result may be shared: callers must not change it.
func (ix *index) filter(q store.SearchQuery, failing bool) *roaring.Bitmap {
	if len(q.Tags) == 0 && q.Owner == "" && len(q.Health) == 0 && defaultStatuses(q.Statuses) {
		i := 0
		if failing {
			i = 1
		}
		if v := ix.visible[i]; v != nil {
			return v
		}
	}
	return ix.filterOf(q, failing)
}

// filterOf is filter, made.
func (ix *index) filterOf(q store.SearchQuery, failing bool) *roaring.Bitmap {
	statuses := q.Statuses
	if len(statuses) == 0 {
		statuses = []string{store.StatusOnline, store.StatusStale}
	}
	out := union(ix.status, statuses)
	if failing {
		out.And(orEmpty(ix.health[agent.HealthFailing]))
	} else {
		if f := ix.health[agent.HealthFailing]; f != nil {
			out.AndNot(f)
		}
		if len(q.Health) > 0 {
			out.And(union(ix.health, q.Health))
		}
	}
	for _, t := range q.Tags {
		out.And(orEmpty(ix.tags[t]))
	}
	if q.Owner != "" {
		out.And(orEmpty(ix.owners[q.Owner]))
	}
	return out
}

var empty = roaring.New()

func orEmpty(b *roaring.Bitmap) *roaring.Bitmap {
	if b == nil {
		return empty
	}
	return b
}

// tierSet is one tier of a search pass: its rank (the cursor's) and its
// listings.
type tierSet struct {
	rank float64
	set  *roaring.Bitmap
}

// tiers are the tiers of one health pass of q (terms folded), whose
// filters allow the listings of allowed: without text, or sorted newest
// first, one tier (rank 0) of every listing the filters allow; with text,
// the three relevance tiers. text is the set of the terms over all fields
// (ix.text), nil without terms; owned as text says.
func (ix *index) tiers(q store.SearchQuery, terms []string, text *roaring.Bitmap, owned bool, allowed *roaring.Bitmap) []tierSet {
	if text == nil {
		return []tierSet{{0, allowed}}
	}
	anywhere := and(text, owned, allowed)
	if q.Sort == store.SortNewest || anywhere.IsEmpty() {
		return []tierSet{{0, anywhere}}
	}
	set, owned := ix.text(title, terms)
	inTitle := and(set, owned, anywhere)
	set, owned = ix.text(head, terms)
	inHead := and(set, owned, anywhere)
	// anywhere and inHead were made here: each becomes its tier in place.
	anywhere.AndNot(inHead)
	inHead.AndNot(inTitle)
	return []tierSet{{1, inTitle}, {2, inHead}, {3, anywhere}}
}

// hit is one listing of a page as the index found it.
type hit struct {
	pos     int64
	seq     int64
	rank    float64
	failing bool
	stale   bool
}

// page finds the listings of one page of q, in page order: at most
// limit+1 (one more than the page tells that there is a next one). A
// relevance tier is walked in its status passes (store.StatusPasses), each
// the tier's set ANDed with the online bitmap or without it, made only
// when the page reaches it. With text, matches is what countMatches would
// say, counted from the text's set that the page makes anyway (the API
// asks for both, and the set was made twice: BENCHMARKS.md "Memory at
// 100k listings", stop 40); without text, -1.
func (ix *index) page(q store.SearchQuery, cur store.Cursor, hasCursor bool, limit int) (hits []hit, matches int) {
	terms := queryTerms(store.SearchTerms(q.Q))
	hits = make([]hit, 0, limit+1)
	healthPasses := store.HealthPasses(q.Health)
	var (
		allowed [2]*roaring.Bitmap // by health pass
		text    *roaring.Bitmap
		owned   bool
	)
	matches = -1
	if len(terms) > 0 {
		text, owned = ix.text(all, terms)
		matches = 0
		for i, failing := range healthPasses {
			allowed[i] = ix.filter(q, failing)
			matches += int(allowed[i].AndCardinality(text))
		}
	}
	for i, failing := range healthPasses {
		if hasCursor && cur.Failing && !failing {
			continue
		}
		if allowed[i] == nil {
			allowed[i] = ix.filter(q, failing)
		}
		// The text's set may become the tiers in place in the last pass.
		for _, t := range ix.tiers(q, terms, text, owned && i == len(healthPasses)-1, allowed[i]) {
			passes := []store.StatusPass{{}} // without tiers: the set as it is
			if t.rank > 0 {
				passes = store.StatusPasses(q.Statuses)
			}
			for _, sp := range passes {
				before, atCursor := false, false
				if hasCursor {
					before, atCursor = cur.Place(failing, t.rank, sp.Stale)
				}
				if before {
					continue
				}
				set := t.set
				if t.rank > 0 {
					set = ix.statusPass(set, sp.Stale)
				}
				it := set.Iterator()
				if atCursor {
					if cur.Pos <= 1 {
						continue // nothing is older than the first listing
					}
					it.AdvanceIfNeeded(key(min(cur.Pos-1, maxPos)))
				}
				for it.HasNext() {
					k := it.Next()
					hits = append(hits, hit{pos: posOf(k), seq: ix.docs.get(uint32(posOf(k))).seq, rank: t.rank, failing: failing, stale: sp.Stale})
					if len(hits) > limit {
						return hits, matches
					}
				}
			}
		}
	}
	return hits, matches
}

// statusPass is the part of set (listings of the statuses a search
// allows) in one status pass: the online listings, or (stale) the others.
func (ix *index) statusPass(set *roaring.Bitmap, stale bool) *roaring.Bitmap {
	online := ix.status[store.StatusOnline]
	switch {
	case online == nil && stale:
		return set
	case online == nil:
		return empty
	case stale:
		return roaring.AndNot(set, online)
	}
	return roaring.And(set, online)
}

// countMatches counts the listings q finds (its text and filters, both
// health passes as store.HealthPasses says): the set tagCounts counts
// the tags of, without making it. The passes are disjoint (a listing is
// failing or not), so their counts add up; making the set copied the
// visible listings' bitmap for every count (at 100k listings, the largest
// part of what a distinct-query search allocated; BENCHMARKS.md "Memory
// at 100k listings", stop 39).
func (ix *index) countMatches(q store.SearchQuery) int {
	var text *roaring.Bitmap
	if terms := queryTerms(store.SearchTerms(q.Q)); len(terms) > 0 {
		if text, _ = ix.text(all, terms); text.IsEmpty() {
			return 0
		}
	}
	var n uint64
	for _, failing := range store.HealthPasses(q.Health) {
		if f := ix.filter(q, failing); text == nil {
			n += f.GetCardinality()
		} else {
			n += f.AndCardinality(text)
		}
	}
	return int(n)
}

// found is the set of listings q finds, over all its pages.
func (ix *index) found(q store.SearchQuery) *roaring.Bitmap {
	terms := queryTerms(store.SearchTerms(q.Q))
	found := roaring.New()
	for _, failing := range store.HealthPasses(q.Health) {
		found.Or(ix.filter(q, failing))
	}
	if len(terms) > 0 {
		text, _ := ix.text(all, terms)
		found.And(text)
	}
	return found
}

// tagCounts counts the tags of the listings q finds (its text and
// filters, both health passes as store.HealthPasses says), most first then
// by tag (bytes), at most limit.
func (ix *index) tagCounts(q store.SearchQuery, limit int) []store.TagCount {
	found := ix.found(q)
	out := []store.TagCount{}
	for t, b := range ix.tags {
		if n := b.AndCardinality(found); n > 0 {
			out = append(out, store.TagCount{Tag: t, Count: int(n)})
		}
	}
	slices.SortFunc(out, func(a, b store.TagCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	return out[:min(len(out), limit)]
}
