// Package searchindex is the in-process search index of the listings: a
// store.Catalogue's text searches answered from memory, the page's rows
// then read by position from the engine. It keeps the engines' meaning of
// a search exactly (store/storetest is its contract too): the words of a
// query prefix-matched and ANDed; relevance tiers (every word in the name
// or display name; in those or the tags; anywhere), newest first within a
// tier; failing agents last; the same filters and keyset cursors.
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
// Bitmaps are github.com/RoaringBitmap/roaring (the library bleve's
// postings use). bleve itself was considered and not used: its search
// collects and sorts every hit of a query by a stored field, where a tier
// here stops after a page, and its in-memory index held several times the
// memory for the same listings.
package searchindex

import (
	"encoding/binary"
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

// doc is what the index remembers of one listing: enough to remove it
// again and to check a page read from the engine against it.
type doc struct {
	seq    int64
	status string
	health string
	owner  string
	tags   []string
	// terms are the ids of its words (field all), sorted, as uvarint
	// deltas: a third of a []uint32's memory.
	terms []byte
	// title and head hold the ids of the words of those fields that are
	// not in all's list only by being there: the field bits of each term,
	// packed in the same order as terms (bit 0 title, bit 1 head).
	fields []byte
}

// index is the bitmaps of the listings. Its methods are called with mu
// held by Index (read for queries, write for changes).
type index struct {
	docs map[uint32]*doc
	// words: a word's id is its place in list; sorted holds the ids in
	// word order (for prefix ranges), unsortedFrom the ids appended since
	// it was last sorted.
	ids          map[string]uint32
	list         []string
	sorted       []uint32
	unsortedFrom int
	// post[f][id] is the set of listings whose field f holds word id.
	post [nFields][]*roaring.Bitmap
	// Filters: status, health state, tag, owner → listings.
	status, health, tags, owners map[string]*roaring.Bitmap
	// intern keeps one copy of repeated strings (owners, tags, states).
	intern map[string]string
}

func newIndex() *index {
	return &index{
		docs: map[uint32]*doc{}, ids: map[string]uint32{},
		status: map[string]*roaring.Bitmap{}, health: map[string]*roaring.Bitmap{},
		tags: map[string]*roaring.Bitmap{}, owners: map[string]*roaring.Bitmap{},
		intern: map[string]string{},
	}
}

func (ix *index) str(s string) string {
	if v, ok := ix.intern[s]; ok {
		return v
	}
	s = strings.Clone(s)
	ix.intern[s] = s
	return s
}

// wordID returns the id of w, adding it if new.
func (ix *index) wordID(w string) uint32 {
	if id, ok := ix.ids[w]; ok {
		return id
	}
	id := uint32(len(ix.list))
	w = strings.Clone(w)
	ix.ids[w] = id
	ix.list = append(ix.list, w)
	for f := range ix.post {
		ix.post[f] = append(ix.post[f], nil)
	}
	return id
}

// sortWords brings sorted up to date: a few new words are inserted in
// place, many sort the whole list again.
func (ix *index) sortWords() {
	added := ix.list[ix.unsortedFrom:]
	if len(added) == 0 {
		return
	}
	cmp := func(a, b uint32) int { return strings.Compare(ix.list[a], ix.list[b]) }
	if len(added) > 64 {
		for id := ix.unsortedFrom; id < len(ix.list); id++ {
			ix.sorted = append(ix.sorted, uint32(id))
		}
		slices.SortFunc(ix.sorted, cmp)
	} else {
		for id := ix.unsortedFrom; id < len(ix.list); id++ {
			i, _ := slices.BinarySearchFunc(ix.sorted, uint32(id), cmp)
			ix.sorted = slices.Insert(ix.sorted, i, uint32(id))
		}
	}
	ix.unsortedFrom = len(ix.list)
}

func add(m map[string]*roaring.Bitmap, k string, x uint32) {
	b := m[k]
	if b == nil {
		b = roaring.New()
		m[k] = b
	}
	b.Add(x)
}

func remove(m map[string]*roaring.Bitmap, k string, x uint32) {
	if b := m[k]; b != nil {
		b.Remove(x)
		if b.IsEmpty() {
			delete(m, k)
		}
	}
}

// apply makes the index hold d (or not, for a tombstone).
func (ix *index) apply(d store.IndexDoc) {
	if d.Pos <= 0 || d.Pos > maxPos {
		return
	}
	k := key(d.Pos)
	ix.drop(k)
	if d.Tombstone {
		return
	}
	nd := &doc{seq: d.ChangeSeq, status: ix.str(d.Status), health: ix.str(d.Health), owner: ix.str(d.Owner)}
	for _, t := range d.Tags {
		t = ix.str(t)
		if !slices.Contains(nd.tags, t) {
			nd.tags = append(nd.tags, t)
		}
	}
	// The field bits of each word of the listing.
	bits := map[uint32]byte{}
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
	ids := make([]uint32, 0, len(bits))
	for id := range bits {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var prev uint32
	for _, id := range ids {
		nd.terms = binary.AppendUvarint(nd.terms, uint64(id-prev))
		prev = id
		nd.fields = append(nd.fields, bits[id])
		for f := range nFields {
			if bits[id]&(1<<f) != 0 {
				b := ix.post[f][id]
				if b == nil {
					b = roaring.New()
					ix.post[f][id] = b
				}
				b.Add(k)
			}
		}
	}
	add(ix.status, nd.status, k)
	add(ix.health, nd.health, k)
	add(ix.owners, nd.owner, k)
	for _, t := range nd.tags {
		add(ix.tags, t, k)
	}
	ix.docs[k] = nd
}

// drop removes the listing at key k, if held.
func (ix *index) drop(k uint32) {
	od := ix.docs[k]
	if od == nil {
		return
	}
	delete(ix.docs, k)
	var id uint32
	for i, rest := 0, od.terms; len(rest) > 0; i++ {
		delta, n := binary.Uvarint(rest)
		rest = rest[n:]
		id += uint32(delta)
		for f := range nFields {
			if od.fields[i]&(1<<f) != 0 {
				if b := ix.post[f][id]; b != nil {
					b.Remove(k)
					if b.IsEmpty() {
						ix.post[f][id] = nil
					}
				}
			}
		}
	}
	remove(ix.status, od.status, k)
	remove(ix.health, od.health, k)
	remove(ix.owners, od.owner, k)
	for _, t := range od.tags {
		remove(ix.tags, t, k)
	}
}

// prefix is the set of listings whose field f holds a word starting with
// p. The result may be shared: callers must not change it.
func (ix *index) prefix(f field, p string) *roaring.Bitmap {
	lo, _ := slices.BinarySearchFunc(ix.sorted, p, func(id uint32, p string) int { return strings.Compare(ix.list[id], p) })
	var bs []*roaring.Bitmap
	for _, id := range ix.sorted[lo:] {
		if !strings.HasPrefix(ix.list[id], p) {
			break
		}
		if b := ix.post[f][id]; b != nil {
			bs = append(bs, b)
		}
	}
	switch len(bs) {
	case 0:
		return roaring.New()
	case 1:
		return bs[0]
	}
	return roaring.FastOr(bs...)
}

// text is the set of listings whose field f holds every term (each a
// prefix of one of its words).
func (ix *index) text(f field, terms []string) *roaring.Bitmap {
	var out *roaring.Bitmap
	for _, t := range terms {
		b := ix.prefix(f, t)
		if out == nil {
			out = b
		} else {
			out = roaring.And(out, b)
		}
		if out.IsEmpty() {
			break
		}
	}
	return out
}

// union of the bitmaps of m under keys (deduplicated); nil keys: nil.
func union(m map[string]*roaring.Bitmap, keys []string) *roaring.Bitmap {
	var bs []*roaring.Bitmap
	for _, k := range dedupe(keys) {
		if b := m[k]; b != nil {
			bs = append(bs, b)
		}
	}
	return roaring.FastOr(bs...)
}

func dedupe(xs []string) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// filter is the set of listings q's filters (statuses, health, tags,
// owner; not its text) allow in one health pass, failing or not.
func (ix *index) filter(q store.SearchQuery, failing bool) *roaring.Bitmap {
	statuses := q.Statuses
	if len(dedupe(statuses)) == 0 {
		statuses = []string{store.StatusOnline, store.StatusStale}
	}
	out := union(ix.status, statuses)
	if failing {
		out.And(orEmpty(ix.health[agent.HealthFailing]))
	} else {
		if f := ix.health[agent.HealthFailing]; f != nil {
			out.AndNot(f)
		}
		if hs := dedupe(q.Health); len(hs) > 0 {
			out.And(union(ix.health, hs))
		}
	}
	for _, t := range dedupe(q.Tags) {
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

// tiers are the tiers of one health pass of q (terms folded): without
// text, or sorted newest first, one tier (rank 0) of every listing the
// filters allow; with text, the three relevance tiers.
func (ix *index) tiers(q store.SearchQuery, terms []string, failing bool) []tierSet {
	allowed := ix.filter(q, failing)
	if len(terms) == 0 {
		return []tierSet{{0, allowed}}
	}
	anywhere := roaring.And(ix.text(all, terms), allowed)
	if q.Sort == store.SortNewest || anywhere.IsEmpty() {
		return []tierSet{{0, anywhere}}
	}
	inTitle := roaring.And(ix.text(title, terms), anywhere)
	inHead := roaring.And(ix.text(head, terms), anywhere)
	return []tierSet{
		{1, inTitle},
		{2, roaring.AndNot(inHead, inTitle)},
		{3, roaring.AndNot(anywhere, inHead)},
	}
}

// hit is one listing of a page as the index found it.
type hit struct {
	pos     int64
	seq     int64
	rank    float64
	failing bool
}

// page finds the listings of one page of q, in page order: at most
// limit+1 (one more than the page tells that there is a next one).
func (ix *index) page(q store.SearchQuery, cur store.Cursor, hasCursor bool, limit int) []hit {
	terms := queryTerms(store.SearchTerms(q.Q))
	var hits []hit
	for _, failing := range store.HealthPasses(q.Health) {
		if hasCursor && cur.Failing && !failing {
			continue
		}
		atCursor := hasCursor && cur.Failing == failing
		for _, t := range ix.tiers(q, terms, failing) {
			if atCursor && t.rank < cur.Rank {
				continue
			}
			it := t.set.Iterator()
			if atCursor && t.rank == cur.Rank {
				if cur.Pos <= 1 {
					continue // nothing is older than the first listing
				}
				it.AdvanceIfNeeded(key(min(cur.Pos-1, maxPos)))
			}
			for it.HasNext() {
				k := it.Next()
				hits = append(hits, hit{pos: posOf(k), seq: ix.docs[k].seq, rank: t.rank, failing: failing})
				if len(hits) > limit {
					return hits
				}
			}
		}
	}
	return hits
}

// tagCounts counts the tags of the listings q finds (its text and
// filters, both health passes as store.HealthPasses says), most first then
// by tag (bytes), at most limit.
func (ix *index) tagCounts(q store.SearchQuery, limit int) []store.TagCount {
	terms := queryTerms(store.SearchTerms(q.Q))
	found := roaring.New()
	for _, failing := range store.HealthPasses(q.Health) {
		found.Or(ix.filter(q, failing))
	}
	if len(terms) > 0 {
		found.And(ix.text(all, terms))
	}
	counts := map[string]int{}
	for it := found.Iterator(); it.HasNext(); {
		for _, t := range ix.docs[it.Next()].tags {
			counts[t]++
		}
	}
	out := make([]store.TagCount, 0, len(counts))
	for t, n := range counts {
		out = append(out, store.TagCount{Tag: t, Count: n})
	}
	slices.SortFunc(out, func(a, b store.TagCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	return out[:min(len(out), limit)]
}
