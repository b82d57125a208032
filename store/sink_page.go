package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentsite/agentsite/agent"
)

// PutAll is Put for a page of verified records (a catalogue sync page):
// each record is judged by Put's rules (its status from its host's
// heartbeat, its publisher's quota, the seq rule), and the page is
// written in one store transaction when the Store runs them (a Batcher,
// or a Cache in front of one) instead of one per record: a commit per
// record was most of a mirror's fill (BENCHMARKS.md, "Mirror fill CPU").
// envs[i] is recs[i]'s envelope.
//
// Each record's outcome is its own, as if Put had been called for each in
// turn: changed[i] and errs[i] are recs[i]'s. A record refused (over its
// publisher's quota) or whose write fails changes nothing of the others:
// a failed write rolls the first try back, and the page is written again
// with a savepoint per record, which refuses that record only. If the
// transaction fails as a whole (its commit), each record goes through Put.
func (s *Sink) PutAll(ctx context.Context, recs []*agent.Record, envs [][]byte) (changed []bool, errs []error) {
	changed, errs = make([]bool, len(recs)), make([]error, len(recs))
	if len(envs) != len(recs) {
		for i := range errs {
			errs[i] = fmt.Errorf("store: a page of %d records with %d envelopes", len(recs), len(envs))
		}
		return changed, errs
	}
	b, ok := s.batcher()
	if !ok || len(recs) < 2 {
		for i := range recs {
			changed[i], errs[i] = s.Put(ctx, recs[i], envs[i])
		}
		return changed, errs
	}
	t := s.now()
	ls, write, nodes := s.pageListings(ctx, recs, envs, t, errs)
	errRedo := errors.New("a write of the page failed: again with a savepoint per record")
	run := func(saved bool, last **pageQuota) func(ctx context.Context, tx Tx) error {
		return func(ctx context.Context, tx Tx) error {
			clear(changed)
			quota := &pageQuota{s: s, pubs: map[string]*pubQuota{}, nodes: nodes, now: t}
			*last = quota
			if pw, ok := tx.(PageWriter); ok && !saved && distinct(ls, write) {
				return s.writePage(ctx, pw, quota, ls, write, changed, errs, errRedo)
			}
			for i := range ls {
				if !write[i] {
					continue
				}
				errs[i] = nil
				rec := &ls[i].Record
				counted := false
				if rec.Publisher != s.SelfID {
					var err error
					if counted, err = quota.admit(ctx, rec, ls[i].Status); err != nil {
						errs[i] = err
						continue
					}
				}
				ch, err := upsert(ctx, tx, ls[i])
				if err != nil {
					if !saved {
						return errRedo
					}
					if counted { // not stored: it does not count
						quota.forget(rec)
					}
					errs[i] = err
					continue
				}
				changed[i] = ch
			}
			return nil
		}
	}
	var quota *pageQuota // the last try's
	err := b.InBatchWhole(ctx, run(false, &quota))
	if errors.Is(err, errRedo) && ctx.Err() == nil {
		err = b.InBatch(ctx, run(true, &quota))
	}
	if err != nil {
		// The transaction failed as a whole: nothing of it was kept. Each
		// record on its own, so that none is lost for another's sake.
		clear(changed)
		for i := range recs {
			if !write[i] {
				continue
			}
			if ctx.Err() != nil {
				errs[i] = fmt.Errorf("store the page's records: %w", err)
				continue
			}
			changed[i], errs[i] = s.Put(ctx, recs[i], envs[i])
		}
		return changed, errs
	}
	quota.remember()
	s.onlineAfterPage(ctx, ls, changed, errs, t)
	return changed, errs
}

// PageWriter is a Tx that writes many listings at once (SQLite: in one
// statement, which its full-text index needs to write a page's terms
// once). changed[i] says whether ls[i] was written (a stale seq is not);
// the ids of ls are distinct. An error leaves the transaction's state
// unknown: the caller rolls it back.
type PageWriter interface {
	UpsertRecords(ctx context.Context, ls []Listing) (changed []bool, err error)
}

// writePage is a page's first try written by a PageWriter: every record
// judged in turn, those admitted written at once. If the write fails, it
// returns errRedo (the page is tried again record by record).
func (s *Sink) writePage(ctx context.Context, pw PageWriter, quota *pageQuota, ls []Listing, write, changed []bool, errs []error, errRedo error) error {
	at := make([]int, 0, len(ls))
	page := make([]Listing, 0, len(ls))
	for i := range ls {
		if !write[i] {
			continue
		}
		errs[i] = nil
		if rec := &ls[i].Record; rec.Publisher != s.SelfID {
			if _, err := quota.admit(ctx, rec, ls[i].Status); err != nil {
				errs[i] = err
				continue
			}
		}
		at, page = append(at, i), append(page, ls[i])
	}
	if len(page) == 0 {
		return nil
	}
	chs, err := pw.UpsertRecords(ctx, page)
	if err != nil || len(chs) != len(page) {
		return errRedo
	}
	for k, i := range at {
		changed[i] = chs[k]
	}
	return nil
}

// distinct reports whether the listings to write have distinct ids.
func distinct(ls []Listing, write []bool) bool {
	seen := make(map[string]bool, len(ls))
	for i := range ls {
		if !write[i] {
			continue
		}
		if seen[ls[i].Record.ID] {
			return false
		}
		seen[ls[i].Record.ID] = true
	}
	return true
}

// batcher is the Sink's Store as a Batcher, if it runs transactions.
func (s *Sink) batcher() (Batcher, bool) {
	switch st := s.Store.(type) {
	case *Cache:
		return st.batcher()
	case Batcher:
		return st, true
	}
	return nil, false
}

// pageListings makes the listing of each record as Put would, with one
// look-up of the page's hosts and publishers (nodes: their rows); the
// quota is judged as the page is written (pageQuota). If the look-up
// fails, every record gets its error in errs and write[i] false.
func (s *Sink) pageListings(ctx context.Context, recs []*agent.Record, envs [][]byte, t time.Time, errs []error) (ls []Listing, write []bool, nodes map[string]Node) {
	ls, write = make([]Listing, len(recs)), make([]bool, len(recs))
	nodes, err := s.pageNodes(ctx, recs)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return ls, write, nil
	}
	room := s.admitAll(ctx, recs, nodes, t) // before the transaction: it may evict
	for i, rec := range recs {
		host := rec.HostPeerID()
		write[i] = true
		if host == s.SelfID && rec.Publisher == s.SelfID {
			ls[i] = ownListing(rec, envs[i], t)
			continue
		}
		if err := room[i]; err != nil {
			errs[i], write[i] = err, false
			continue
		}
		status := StatusOnline
		if !rec.ExpiresAt.After(t) {
			status = StatusOffline
		} else if n, ok := nodes[host]; !ok || n.Status != StatusOnline {
			status = StatusStale
		}
		ls[i] = Listing{
			Record:     *rec,
			Envelope:   envs[i],
			Status:     status,
			LastSeen:   t,
			HostPeerID: host,
			UpdatedAt:  t,
		}
	}
	return ls, write, nodes
}

// pageNodes is the node rows of the hosts and publishers of recs (their
// heartbeats, their evidence), in one look-up: a record's status is its
// host's, its quota its publisher's.
func (s *Sink) pageNodes(ctx context.Context, recs []*agent.Record) (map[string]Node, error) {
	peers := make([]string, 0, 2*len(recs))
	for _, rec := range recs {
		peers = append(peers, rec.HostPeerID(), rec.Publisher)
	}
	nodes, err := s.nodesOf(ctx, peers...)
	if err != nil {
		return nil, fmt.Errorf("look up the hosts of a page: %w", err)
	}
	return nodes, nil
}

// pageQuota is checkQuota along a page written in one transaction, whose
// reads do not see its writes: a publisher's count is read once, and the
// new ids of the page stored so far are added to it. Whether an id is new
// is looked up only when the count comes near the limit (an id already
// held costs nothing against it), so a page far below every limit reads
// at most one count per publisher. Near the limit the count is read again
// and what is new looked up, so a record is refused exactly when Put,
// called for each in turn, would refuse it.
//
// A count read for one page serves the next pages for quotaMemoTTL (the
// Sink's quotaMemo, with what those pages added): counting a publisher's
// listings was an eighth of a 100k mirror's fill. Far from the limit, a
// publisher may so pass it by what other writers (gossip) added within
// that time, as two Puts racing at the limit may.
type pageQuota struct {
	s     *Sink
	pubs  map[string]*pubQuota
	nodes map[string]Node // the page's hosts and publishers (quotaOf)
	now   time.Time
}

type pubQuota struct {
	held   int             // the publisher's count when the page began
	at     time.Time       // when held was read from the store
	memo   bool            // held came from the Sink's memo, not the store
	isNew  map[string]bool // ids of the page stored, and whether they are new here
	unsure []string        // ids stored and counted as new without looking
}

// count is the publisher's listings that are not offline, with the page's.
func (q *pubQuota) count() int {
	n := q.held + len(q.unsure)
	for _, fresh := range q.isNew {
		if fresh {
			n++
		}
	}
	return n
}

// admit refuses rec, a record to be written, when it is a new id of a
// publisher at its limit (agent.ErrOverQuota); counted says rec's id was
// not of the page before (forget it if its write fails).
func (q *pageQuota) admit(ctx context.Context, rec *agent.Record, status string) (counted bool, err error) {
	limit := q.s.quotaOf(rec.Publisher, q.nodes, q.now)
	p := q.pubs[rec.Publisher]
	if p == nil {
		p = &pubQuota{isNew: map[string]bool{}}
		if n, at, ok := q.s.quota.get(rec.Publisher, q.s.now()); ok {
			p.held, p.at, p.memo = n, at, true
		} else if err := p.read(ctx, q.s, rec.Publisher, limit); err != nil {
			return false, err
		}
		q.pubs[rec.Publisher] = p
	}
	if _, ok := p.isNew[rec.ID]; ok || slices.Contains(p.unsure, rec.ID) {
		return false, nil // stored earlier in the page: this one updates it
	}
	if status == StatusOffline {
		p.isNew[rec.ID] = false // an offline listing is not counted
		return true, nil
	}
	if p.count() < limit {
		p.unsure = append(p.unsure, rec.ID)
		return true, nil
	}
	// Near the limit: the count as the store has it, and what is new.
	if p.memo {
		if err := p.read(ctx, q.s, rec.Publisher, limit); err != nil {
			return false, err
		}
	}
	for _, id := range append(p.unsure, rec.ID) {
		known, err := q.s.Store.HasAgent(ctx, id)
		if err != nil {
			return false, fmt.Errorf("look up agent %s: %w", id, err)
		}
		p.isNew[id] = !known
	}
	p.unsure = p.unsure[:0]
	fresh := p.isNew[rec.ID]
	delete(p.isNew, rec.ID)
	if held := p.count(); fresh && held >= limit {
		_, heard := heardSince(q.nodes, rec.Publisher)
		return false, q.s.overQuota(rec.Publisher, held, limit, heard, q.now)
	}
	p.isNew[rec.ID] = fresh
	return true, nil
}

// read reads the publisher's count from the store.
func (p *pubQuota) read(ctx context.Context, s *Sink, publisher string, limit int) error {
	at := s.now()
	held, err := s.Store.CountPublished(ctx, publisher, limit)
	if err != nil {
		return fmt.Errorf("count listings of publisher %s: %w", publisher, err)
	}
	p.held, p.at, p.memo = held, at, false
	return nil
}

// remember keeps the page's counts, with what it stored, for the next
// pages (until quotaMemoTTL after they were read from the store).
func (q *pageQuota) remember() {
	if q == nil {
		return
	}
	for pub, p := range q.pubs {
		q.s.quota.put(pub, p.count(), p.at)
	}
}

// quotaMemoTTL is how long a publisher's count read from the store serves
// the pages after it.
const quotaMemoTTL = 10 * time.Second

// maxQuotaMemo bounds the publishers remembered.
const maxQuotaMemo = 10_000

// quotaMemo is the publishers' counts as the Sink's last pages left them.
type quotaMemo struct {
	mu sync.Mutex
	m  map[string]memoCount
}

type memoCount struct {
	n  int
	at time.Time // when the count was read from the store
}

func (m *quotaMemo) get(publisher string, now time.Time) (int, time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.m[publisher]
	if !ok || now.Sub(c.at) >= quotaMemoTTL || now.Before(c.at) {
		return 0, time.Time{}, false
	}
	return c.n, c.at, true
}

func (m *quotaMemo) put(publisher string, n int, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxQuotaMemo {
		m.m = map[string]memoCount{}
	}
	m.m[publisher] = memoCount{n: n, at: at}
}

// forget takes back what admit counted for rec, whose write failed.
func (q *pageQuota) forget(rec *agent.Record) {
	p := q.pubs[rec.Publisher]
	if p == nil {
		return
	}
	delete(p.isNew, rec.ID)
	p.unsure = slices.DeleteFunc(p.unsure, func(id string) bool { return id == rec.ID })
}

// onlineAfterPage does what Put does after a listing stored stale whose
// host's heartbeat turned the host online meanwhile: its listings are
// turned online, once per host of the page.
func (s *Sink) onlineAfterPage(ctx context.Context, ls []Listing, changed []bool, errs []error, t time.Time) {
	done := map[string]bool{}
	for i := range ls {
		host := ls[i].HostPeerID
		if !changed[i] || ls[i].Status != StatusStale || done[host] || !s.heard.online(host) {
			continue
		}
		done[host] = true
		if _, err := s.Store.SetHostStatus(ctx, host, StatusOnline, t); err != nil {
			errs[i] = fmt.Errorf("mark listings of %s online: %w", host, err)
		}
	}
}

// PutOwnAll is PutOwn for many records this node signed and hosts, in w
// (a batch's transaction): written at once when w is a PageWriter and
// their ids are distinct, otherwise one PutOwn each. On SQLite a statement
// per record made the full-text index write its pending terms once per
// record (PageWriter); an import of 1M agents wrote each chunk that way.
// changed[i] is recs[i]'s (false: a stale seq, no change). An error
// leaves w's state unknown: the caller rolls it back.
func PutOwnAll(ctx context.Context, w ListingWriter, recs []*agent.Record, envs [][]byte, now time.Time) (changed []bool, err error) {
	if len(envs) != len(recs) {
		return nil, fmt.Errorf("store: %d records with %d envelopes", len(recs), len(envs))
	}
	ls := make([]Listing, len(recs))
	all := make([]bool, len(recs))
	for i, rec := range recs {
		ls[i], all[i] = ownListing(rec, envs[i], now), true
	}
	if pw, ok := w.(PageWriter); ok && len(ls) > 1 && distinct(ls, all) {
		changed, err := pw.UpsertRecords(ctx, ls)
		if err == nil && len(changed) != len(ls) {
			err = fmt.Errorf("store: %d listings written, %d outcomes", len(ls), len(changed))
		}
		return changed, err
	}
	changed = make([]bool, len(ls))
	for i := range ls {
		if changed[i], err = upsert(ctx, w, ls[i]); err != nil {
			return nil, err
		}
	}
	return changed, nil
}
