package registry

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"reflect"
	goruntime "runtime"
	"slices"
	"sync"

	"github.com/agentsite/agentsite/agent"
	"github.com/agentsite/agentsite/store"
)

// Outcomes of one item of a batch.
const (
	OutcomeCreated = "created"
	OutcomeUpdated = "updated"
	OutcomeRefused = "refused"
)

// MaxBatchWorkers bounds how many items of one batch are registered at once.
const MaxBatchWorkers = 16

// BatchItem is one item of a bulk registration: its place in the input and
// either the registration or why it could not be read.
type BatchItem struct {
	Index int
	Input Input
	// Err, when set, is why the item could not be parsed into an Input; it
	// is refused with this error and nothing else is done with it.
	Err error
}

// BatchResult is what became of one item.
type BatchResult struct {
	Index   int
	Name    string
	ID      string // the agent's id (empty when the item was refused before one was derived)
	Outcome string // OutcomeCreated, OutcomeUpdated or OutcomeRefused
	Err     error  // why it was refused
}

// Batch registers many agents for a, each exactly as a form registration
// would (the same normalisation, validation, seq rule and Sink), without
// reading each one back: an item whose name this node already hosts, live
// and manageable by a, updates that agent; any other item creates one. One
// item failing refuses that item only. Items go through workers at a time
// (1..MaxBatchWorkers); items of the same name always go through the same
// worker, in order. done is called once per item, never concurrently.
// Batch returns early only when ctx ends (with ctx's error).
//
// When the store runs transactions (store.Batcher) and the publisher can
// seal without verifying its own signature (FreshPublisher), items go
// BatchChunk at a time, each chunk in one transaction passed explicitly
// (store.Tx); otherwise one by one, as a form would.
func (r *Registry) Batch(ctx context.Context, a Actor, items iter.Seq[BatchItem], workers int, done func(BatchResult)) error {
	workers = min(max(workers, 1), MaxBatchWorkers)
	queues := make([]chan BatchItem, workers)
	var mu sync.Mutex
	report := func(res BatchResult) {
		mu.Lock()
		defer mu.Unlock()
		done(res)
	}
	b, batches := r.Store.(store.Batcher)
	fp, fresh := r.Publisher.(FreshPublisher)
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan BatchItem, BatchChunk)
		wg.Add(1)
		go func(q <-chan BatchItem) {
			defer wg.Done()
			if batches && fresh {
				r.batchChunks(ctx, a, b, fp, q, report)
				return
			}
			for it := range q {
				report(r.batchOne(ctx, a, it))
			}
		}(queues[i])
	}
	var err error
	for it := range items {
		if err = ctx.Err(); err != nil {
			break
		}
		it.Input.normalize()
		h := fnv.New32a()
		_, _ = h.Write([]byte(it.Input.Name))
		queues[int(h.Sum32()%uint32(workers))] <- it
	}
	for _, q := range queues {
		close(q)
	}
	wg.Wait()
	return err
}

// BatchChunk is how many items one transaction of a batch holds, when the
// store can run one (store.Batcher).
const BatchChunk = 500

// BatchAll registers items held at once (one API request) as Batch
// does, in order, BatchChunk at a time, each chunk in one transaction
// when the store runs them: a request of up to BatchChunk items is one
// transaction, its records sealed before it on every core (preseal).
// Batch's workers each take what has reached their queue when they look,
// so a request handed to it was cut into many small transactions. Without
// a Batcher (or a FreshPublisher) it is Batch with workers.
func (r *Registry) BatchAll(ctx context.Context, a Actor, items []BatchItem, workers int, done func(BatchResult)) error {
	b, batches := r.Store.(store.Batcher)
	fp, fresh := r.Publisher.(FreshPublisher)
	if !batches || !fresh {
		return r.Batch(ctx, a, slices.Values(items), workers, done)
	}
	for start := 0; start < len(items); start += BatchChunk {
		if err := ctx.Err(); err != nil {
			return err
		}
		chunk := slices.Clone(items[start:min(start+BatchChunk, len(items))])
		for i := range chunk {
			chunk[i].Input.normalize()
		}
		for _, res := range r.batchChunk(ctx, a, b, fp, chunk) {
			done(res)
		}
	}
	return nil
}

// batchChunks registers q's items BatchChunk at a time, each chunk in one
// store transaction; results are reported once their chunk committed (a
// failed commit refuses the whole chunk, saying why).
func (r *Registry) batchChunks(ctx context.Context, a Actor, b store.Batcher, fp FreshPublisher, q <-chan BatchItem, report func(BatchResult)) {
	for {
		it, ok := <-q
		if !ok {
			return
		}
		items := []BatchItem{it}
	fill:
		for len(items) < BatchChunk {
			select {
			case it, ok := <-q:
				if !ok {
					break fill
				}
				items = append(items, it)
			default:
				break fill
			}
		}
		results := r.batchChunk(ctx, a, b, fp, items)
		for _, res := range results {
			report(res)
		}
	}
}

// batchChunk runs items in one transaction and returns their results once
// it committed (a failed commit refuses every item, saying why). It first
// tries the transaction without a savepoint per store call
// (InBatchWhole), which is what nearly every chunk needs: refusals by
// validation, name or owner are decided before anything is written. If a
// store call fails there, the whole is rolled back and the chunk is run
// again with a savepoint per call (InBatch), so that failure refuses its
// item only. The records stored are announced once their transaction
// committed.
func (r *Registry) batchChunk(ctx context.Context, a Actor, b store.Batcher, fp FreshPublisher, items []BatchItem) []BatchResult {
	var results []BatchResult
	var stored []preparedItem
	errRedo := errors.New("a store call failed: redo with savepoints")
	sealed := r.preseal(ctx, fp, a, items)
	err := b.InBatchWhole(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		results, stored, err = r.batchWhole(ctx, tx, fp, a, items, sealed)
		if err != nil {
			return errRedo
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		err = b.InBatch(ctx, func(ctx context.Context, tx store.Tx) error {
			results, stored = r.batchSaved(ctx, tx, fp, a, items)
			return nil
		})
	}
	if err == nil {
		r.announceAll(ctx, fp, stored)
	}
	if err != nil && len(results) < len(items) { // the first try's, cut short
		results = results[:0]
		for _, it := range items {
			results = append(results, BatchResult{Index: it.Index, Name: it.Input.Name, Outcome: OutcomeRefused})
		}
	}
	for i := range results {
		if err != nil && results[i].Outcome != OutcomeRefused || err != nil && results[i].Err == nil {
			results[i].Outcome, results[i].Err = OutcomeRefused, fmt.Errorf("the transaction of its batch failed: %w", err)
		}
	}
	return results
}

// batchWhole is a chunk's work in tx, a transaction without savepoints:
// every item decided and its record built in order, the records sealed in
// parallel (the CPU-heavy part, on every core) unless sealed holds them
// already (preseal), then written in order.
// Any store failure ends it with an error (the caller rolls back and
// redoes the chunk item by item).
//
// It returns, with the results, the items stored, to announce once the
// transaction committed (announceAll).
func (r *Registry) batchWhole(ctx context.Context, tx store.Tx, fp FreshPublisher, a Actor, items []BatchItem, sealed map[int]*preparedItem) ([]BatchResult, []preparedItem, error) {
	seen := map[string]uint64{}
	prevs := r.prevs(ctx, tx, items)
	ps := make([]preparedItem, len(items))
	for i, it := range items {
		p, stored := r.batchPrepare(ctx, tx, a, it, seen, prevs)
		if stored {
			return nil, nil, p.res.Err
		}
		p.takeSealed(sealed[it.Index])
		if p.rec != nil {
			seen[p.res.ID] = p.rec.Seq
		}
		ps[i] = p
	}
	r.sealAll(fp, ps)
	for _, p := range ps {
		if p.rec != nil && p.env == nil { // refused when sealed: item by item
			return nil, nil, p.res.Err
		}
	}
	results := make([]BatchResult, len(ps))
	var stored []preparedItem
	var recs []*agent.Record
	var envs [][]byte
	for i := range ps {
		p := &ps[i]
		results[i] = p.res
		if p.rec == nil {
			continue
		}
		if err := tx.PutBackend(ctx, p.rec.ID, p.in.Backend); err != nil {
			return nil, nil, fmt.Errorf("store backend: %w", err)
		}
		recs, envs = append(recs, p.opened), append(envs, p.env)
		stored = append(stored, *p)
		results[i].Outcome = p.outcome
	}
	// The chunk's listings at once (one statement on SQLite), after
	// their backends: nothing reads a backend back in between.
	if _, err := store.PutOwnAll(ctx, tx, recs, envs, r.now()); err != nil {
		return nil, nil, fmt.Errorf("publish agent: deliver record: %w", err)
	}
	return results, stored, nil
}

// batchSaved is a chunk's work in tx, a transaction with a savepoint per
// store call, item by item: a store call that fails refuses its item only
// (its backend put back as it was, in tx). It returns the results and the
// items stored, to announce once the transaction committed.
func (r *Registry) batchSaved(ctx context.Context, tx store.Tx, fp FreshPublisher, a Actor, items []BatchItem) ([]BatchResult, []preparedItem) {
	results := make([]BatchResult, 0, len(items))
	var stored []preparedItem
	seen := map[string]uint64{}
	prevs := r.prevs(ctx, tx, items)
	for _, it := range items {
		p, _ := r.batchPrepare(ctx, tx, a, it, seen, prevs)
		if p.rec == nil {
			results = append(results, p.res)
			continue
		}
		if err := r.storeFresh(ctx, tx, fp, &p); err != nil {
			p.res.Err = err
			results = append(results, p.res)
			continue
		}
		seen[p.res.ID] = p.rec.Seq
		p.res.Outcome = p.outcome
		results = append(results, p.res)
		stored = append(stored, p)
	}
	return results, stored
}

// storeFresh seals p's record and writes it with its backend in tx; if
// the record cannot be sealed or written, the backend is put back as it
// was (p.kept, or none).
func (r *Registry) storeFresh(ctx context.Context, tx store.Tx, fp FreshPublisher, p *preparedItem) error {
	env, opened, err := fp.SealFresh(p.rec)
	if err != nil {
		return fmt.Errorf("publish agent: %w", err)
	}
	p.env, p.opened = env, opened
	if err := tx.PutBackend(ctx, p.rec.ID, p.in.Backend); err != nil {
		return fmt.Errorf("store backend: %w", err)
	}
	if _, err := store.PutOwn(ctx, tx, opened, env, r.now()); err != nil {
		r.restoreBackend(ctx, tx, p.rec.ID, p.kept)
		return fmt.Errorf("publish agent: deliver record: %w", err)
	}
	return nil
}

// announceAll sends a committed chunk's records to the network. The
// records are stored: a failed announcement is logged, and the network
// learns the record at its next refresh.
func (r *Registry) announceAll(ctx context.Context, fp FreshPublisher, stored []preparedItem) {
	for _, p := range stored {
		r.changed(p.opened.ID, p.in.Backend.Kind)
		if err := fp.Announce(ctx, p.opened, p.env); err != nil {
			r.logger().WarnContext(ctx, "announcing an imported agent failed; the network gets it at its next refresh", "id", p.opened.ID, "err", err)
		}
	}
}

// preseal decides and seals a chunk's items before its transaction, from
// the store as it is now: a store has one writer (SQLite), and signing is
// a quarter of an import's CPU, so a chunk signed inside its transaction
// kept the other workers waiting for the writer while it signed. The
// transaction decides every item again from what it reads, and takes a
// presealed record only if it would have built the same one (takeSealed);
// a concurrent change of an agent means its item is sealed again there.
// nil when the store cannot read a chunk at once (AgentsGetter) or a read
// fails: the transaction then seals everything, as before.
func (r *Registry) preseal(ctx context.Context, fp FreshPublisher, a Actor, items []BatchItem) map[int]*preparedItem {
	rd, ok := r.Store.(interface {
		batchReader
		store.AgentsGetter
	})
	if !ok {
		return nil
	}
	prevs := r.prevs(ctx, rd, items)
	if prevs == nil {
		return nil
	}
	seen := map[string]uint64{}
	var (
		ps      []preparedItem
		indexes []int
	)
	for _, it := range items {
		p, failed := r.batchPrepare(ctx, rd, a, it, seen, prevs)
		if failed {
			return nil
		}
		if p.rec == nil {
			continue
		}
		seen[p.res.ID] = p.rec.Seq
		ps, indexes = append(ps, p), append(indexes, it.Index)
	}
	r.sealAll(fp, ps)
	sealed := make(map[int]*preparedItem, len(ps))
	for i := range ps {
		if ps[i].env != nil {
			sealed[indexes[i]] = &ps[i]
		}
	}
	return sealed
}

// takeSealed takes the record and envelope presealed for p's item (q,
// from preseal; nil: none), if q follows the same seq as p and its record
// is p's but for the times it was made at (its seq, when it was issued
// and expires).
func (p *preparedItem) takeSealed(q *preparedItem) {
	if p.rec == nil || q == nil || q.prevSeq != p.prevSeq || q.rec.ID != p.rec.ID {
		return
	}
	same := *q.rec
	same.Seq, same.IssuedAt, same.ExpiresAt = p.rec.Seq, p.rec.IssuedAt, p.rec.ExpiresAt
	if !reflect.DeepEqual(&same, p.rec) {
		return
	}
	p.rec, p.env, p.opened = q.rec, q.env, q.opened
}

// sealAll seals the records of ps that are not sealed yet on as many
// goroutines as there are CPUs; a record refused by Seal is refused as
// Publish would refuse it.
func (r *Registry) sealAll(fp FreshPublisher, ps []preparedItem) {
	n := min(goruntime.GOMAXPROCS(0), 8)
	var wg sync.WaitGroup
	for w := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(ps); i += n {
				p := &ps[i]
				if p.rec == nil || p.env != nil {
					continue
				}
				env, opened, err := fp.SealFresh(p.rec)
				if err != nil {
					p.res.Err = fmt.Errorf("publish agent: %w", err)
					continue
				}
				p.env, p.opened = env, opened
			}
		}()
	}
	wg.Wait()
}

// prevs reads the listings items may update in one query of tx; nil if
// that read failed (each item then reads its own).
func (r *Registry) prevs(ctx context.Context, tx store.AgentsGetter, items []BatchItem) map[string]store.Listing {
	ids := make([]string, 0, len(items))
	for _, it := range items {
		if it.Err != nil {
			continue
		}
		if id, err := r.Publisher.AgentID(it.Input.Name); err == nil {
			ids = append(ids, id)
		}
	}
	list, err := tx.GetAgents(ctx, ids)
	if err != nil {
		r.logger().WarnContext(ctx, "reading a batch's agents at once failed; reading them one by one", "err", err)
		return nil
	}
	m := make(map[string]store.Listing, len(list))
	for _, l := range list {
		m[l.Record.ID] = l
	}
	return m
}

// batchOne registers one item outside a transaction, as a form would:
// an update of the live agent of that name when a may manage it, else a
// creation (with Create's rules).
func (r *Registry) batchOne(ctx context.Context, a Actor, it BatchItem) BatchResult {
	p, _ := r.batchPrepare(ctx, r.Store, a, it, nil, nil)
	if p.rec == nil {
		return p.res
	}
	res := p.res
	if err := r.deliver(ctx, p.rec, p.in.Backend, p.kept); err != nil {
		res.Err = err
		return res
	}
	res.Outcome = p.outcome
	return res
}

// batchReader is what batchPrepare reads: the store, or a batch's
// transaction (store.Tx).
type batchReader interface {
	GetAgent(ctx context.Context, id string) (store.Listing, error)
	GetBackend(ctx context.Context, id string) (agent.Backend, error)
}

// preparedItem is an item of a batch decided (create or update, at which
// seq) and its record built and validated, not yet signed nor written.
// rec is nil when the item is refused (res says why).
type preparedItem struct {
	res     BatchResult
	outcome string
	in      Input
	rec     *agent.Record
	kept    *agent.Backend
	env     []byte        // the sealed envelope (a batch transaction)
	opened  *agent.Record // the record decoded from env
	prevSeq uint64        // the seq rec follows (0: a creation)
}

// batchPrepare is an item up to the write: the reads (from rd), the name
// and owner rules, the seq, the record. stored reports a refusal by the
// store (a failed read), not by the item's own validation, name or owner.
//
// seen, in a batch transaction, holds the seq each agent of the
// transaction got so far (its reads may not see its own writes); nil
// outside one. prevs, when not nil, holds the listings of the chunk's ids
// as read at the start of its transaction (an id missing has none).
func (r *Registry) batchPrepare(ctx context.Context, rd batchReader, a Actor, it BatchItem, seen map[string]uint64, prevs map[string]store.Listing) (p preparedItem, stored bool) {
	res := BatchResult{Index: it.Index, Name: it.Input.Name, Outcome: OutcomeRefused}
	p.res = res
	if it.Err != nil {
		p.res.Err = it.Err
		return p, false
	}
	in := it.Input
	if err := checkOrigin(a, in); err != nil {
		p.res.Err = err
		return p, false
	}
	id, err := r.Publisher.AgentID(in.Name)
	if err != nil {
		p.res.Err = &agent.ValidationError{Fields: map[string]string{"name": err.Error()}}
		return p, false
	}
	p.res.ID = id
	var prevSeq uint64
	owner := a.Owner
	var kept *agent.Backend
	outcome := OutcomeCreated
	var prev store.Listing
	if prevs != nil {
		var ok bool
		if prev, ok = prevs[id]; !ok {
			err = store.ErrNotFound
		}
	} else {
		prev, err = rd.GetAgent(ctx, id)
	}
	if written, ok := seen[id]; ok { // an earlier item of this transaction
		if errors.Is(err, store.ErrNotFound) || (err == nil && prev.Record.Seq < written) {
			prevSeq = written
			outcome = OutcomeUpdated
			err = errSeenInBatch
		}
	}
	switch {
	case errors.Is(err, errSeenInBatch):
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		p.res.Err = fmt.Errorf("look up agent: %w", err)
		return p, true
	case prev.Record.Tombstone:
		if !a.Operator && prev.Record.Owner != a.Owner {
			p.res.Err = fieldError("name", MsgNameReserved)
			return p, false
		}
		prevSeq = prev.Record.Seq
	case !a.CanManage(prev):
		p.res.Err = fieldError("name", msgNameInUse)
		return p, false
	case r.signable(prev) != nil:
		p.res.Err = r.signable(prev)
		return p, false
	default:
		outcome = OutcomeUpdated
		prevSeq = prev.Record.Seq
		owner = prev.Record.Owner
		old, err := rd.GetBackend(ctx, id)
		switch {
		case err == nil && old.Kind == agent.BackendBuiltin && (in.Backend.Kind != old.Kind || in.Backend.Builtin != old.Builtin):
			// A builtin (the demo agents are builtins) is the node's own:
			// an import of the same name and another backend would be
			// undone at the next start. The same builtin again
			// (an import run twice) updates it as before.
			p.res.Err = fieldError("name", msgBuiltinKept)
			return p, false
		case err == nil:
			kept = &old
			in.Backend = KeepKey(in.Backend, old)
		case !errors.Is(err, store.ErrNotFound):
			p.res.Err = fmt.Errorf("load backend: %w", err)
			return p, true
		}
	}
	rec, err := r.newRecord(id, owner, prevSeq, in)
	if err != nil {
		p.res.Err = err
		return p, false
	}
	p.rec, p.in, p.kept, p.outcome, p.prevSeq = rec, in, kept, outcome, prevSeq
	return p, false
}

// msgBuiltinKept refuses an import item named as a builtin agent.
const msgBuiltinKept = "is one of this node's builtin agents; an import never replaces it: give the item another name"

// errSeenInBatch marks an item whose agent an earlier item of the same
// batch transaction wrote.
var errSeenInBatch = errors.New("written earlier in this batch")
