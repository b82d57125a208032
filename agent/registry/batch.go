package registry

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
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
func (r *Registry) Batch(ctx context.Context, a Actor, items iter.Seq[BatchItem], workers int, done func(BatchResult)) error {
	workers = min(max(workers, 1), MaxBatchWorkers)
	queues := make([]chan BatchItem, workers)
	var mu sync.Mutex
	report := func(res BatchResult) {
		mu.Lock()
		defer mu.Unlock()
		done(res)
	}
	var wg sync.WaitGroup
	for i := range queues {
		queues[i] = make(chan BatchItem, 64)
		wg.Add(1)
		go func(q <-chan BatchItem) {
			defer wg.Done()
			if b, ok := r.Store.(store.Batcher); ok {
				r.batchChunks(ctx, a, b, q, report)
				return
			}
			for it := range q {
				res, _ := r.batchOne(ctx, a, it, nil)
				report(res)
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
const BatchChunk = 200

// batchChunks registers q's items BatchChunk at a time, each chunk in one
// store transaction; results are reported once their chunk committed (a
// failed commit refuses the whole chunk, saying why).
func (r *Registry) batchChunks(ctx context.Context, a Actor, b store.Batcher, q <-chan BatchItem, report func(BatchResult)) {
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
		results := r.batchChunk(ctx, a, b, items)
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
// again with a savepoint per call, so that failure refuses its item only.
func (r *Registry) batchChunk(ctx context.Context, a Actor, b store.Batcher, items []BatchItem) []BatchResult {
	var results []BatchResult
	errRedo := errors.New("a store call failed: redo with savepoints")
	err := b.InBatchWhole(ctx, func(ctx context.Context) error {
		results = make([]BatchResult, 0, len(items))
		seen := map[string]uint64{}
		for _, it := range items {
			res, wrote := r.batchOne(ctx, a, it, seen)
			if res.Outcome == OutcomeRefused && wrote {
				return errRedo
			}
			results = append(results, res)
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		err = b.InBatch(ctx, func(ctx context.Context) error {
			results = make([]BatchResult, 0, len(items))
			seen := map[string]uint64{}
			for _, it := range items {
				res, _ := r.batchOne(ctx, a, it, seen)
				results = append(results, res)
			}
			return nil
		})
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

// batchOne registers one item: an update of the live agent of that name
// when a may manage it, else a creation (with Create's rules). seen, in a
// batch transaction, holds the seq each agent of the transaction got so
// far (its reads may not see its own writes); nil outside one. stored
// reports that a refusal came from the store (a failed read or write),
// not from the item's own validation, name or owner.
func (r *Registry) batchOne(ctx context.Context, a Actor, it BatchItem, seen map[string]uint64) (res BatchResult, stored bool) {
	res = BatchResult{Index: it.Index, Name: it.Input.Name, Outcome: OutcomeRefused}
	if it.Err != nil {
		res.Err = it.Err
		return res, false
	}
	in := it.Input
	id, err := r.Publisher.AgentID(in.Name)
	if err != nil {
		res.Err = &agent.ValidationError{Fields: map[string]string{"name": err.Error()}}
		return res, false
	}
	res.ID = id
	var prevSeq uint64
	owner := a.Owner
	var kept *agent.Backend
	outcome := OutcomeCreated
	prev, err := r.Store.GetAgent(ctx, id)
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
		res.Err = fmt.Errorf("look up agent: %w", err)
		return res, true
	case prev.Record.Tombstone:
		if !a.Operator && prev.Record.Owner != a.Owner {
			res.Err = fieldError("name", MsgNameReserved)
			return res, false
		}
		prevSeq = prev.Record.Seq
	case !a.CanManage(prev):
		res.Err = fieldError("name", msgNameInUse)
		return res, false
	case r.signable(prev) != nil:
		res.Err = r.signable(prev)
		return res, false
	default:
		outcome = OutcomeUpdated
		prevSeq = prev.Record.Seq
		owner = prev.Record.Owner
		old, err := r.Store.GetBackend(ctx, id)
		switch {
		case err == nil:
			kept = &old
			in.Backend = KeepKey(in.Backend, old)
		case !errors.Is(err, store.ErrNotFound):
			res.Err = fmt.Errorf("load backend: %w", err)
			return res, true
		}
	}
	rec, err := r.newRecord(id, owner, prevSeq, in)
	if err != nil {
		res.Err = err
		return res, false
	}
	if err := r.deliver(ctx, rec, in.Backend, kept, seen != nil); err != nil {
		res.Err = err
		return res, true
	}
	if seen != nil {
		seen[id] = rec.Seq
	}
	res.Outcome = outcome
	return res, false
}

// errSeenInBatch marks an item whose agent an earlier item of the same
// batch transaction wrote.
var errSeenInBatch = errors.New("written earlier in this batch")
